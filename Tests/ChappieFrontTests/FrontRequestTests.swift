import ChappieStoreFormat
import Foundation
import Testing

@testable import ChappieFront

@Suite("The front binary answers only the command lines it reads exactly, and hands on the rest")
struct FrontRequestTests {
    static func request(_ line: String, _ environment: [String: String] = ["HOME": "/home/u"]) -> FrontRequest {
        FrontRequest(arguments: line.split(separator: " ").map(String.init), environment: { environment[$0] })
    }

    @Test("--version, and token with a name, --json, --margin, --socket and --home in any order the full binary takes")
    func served() {
        #expect(Self.request("--version") == .version)
        #expect(Self.request("token") == .token(.init()))
        #expect(Self.request("token work") == .token(.init(name: "work")))
        #expect(Self.request("token work --json") == .token(.init(name: "work", json: true)))
        #expect(Self.request("--json token") == .token(.init(json: true)))
        #expect(Self.request("token --margin 2h work") == .token(.init(name: "work", marginSeconds: 7200)))
        #expect(Self.request("token --margin=90 work") == .token(.init(name: "work", marginSeconds: 90)))
        #expect(Self.request("token --margin +5m") == .token(.init(marginSeconds: 300)))
        #expect(Self.request("--home /d token w") == .token(.init(name: "w", home: "/d")))
        #expect(Self.request("token w --home=/d") == .token(.init(name: "w", home: "/d")))
        #expect(Self.request("token --socket /s") == .token(.init(socket: "/s")))
        #expect(Self.request("token token") == .token(.init(name: "token")))
        #expect(Self.request("accounts list") == .accountsList(home: nil))
        #expect(Self.request("--home /d accounts list") == .accountsList(home: "/d"))
        #expect(Self.request("accounts list --home=/d") == .accountsList(home: "/d"))
        #expect(Self.request("accounts current") == .accountsCurrent(home: nil))
        #expect(Self.request("accounts current --home /d") == .accountsCurrent(home: "/d"))
        #expect(Self.request("prompt") == .prompt(format: "{account} {window} {used}% ↻{reset}", home: nil))
        #expect(Self.request("--home /d prompt --format {plan}:{left}") == .prompt(format: "{plan}:{left}", home: "/d"))
        #expect(Self.request("prompt --format=x --home=/d") == .prompt(format: "x", home: "/d"))
    }

    @Test(
        "Everything else goes to the full binary",
        arguments: [
            "", "--help", "-h", "help token", "token --help", "--version --json", "token a b", "token --verbose", "token -- a",
            "token --margin 5x", "token --margin -5", "token --margin 10000000", "token --home=~/d", "token --socket ~/s", "token --home ~",
            "token --margin", "token --issuer http://x",
            "token --backend http://x", "token --store postgres://x", "token --key-file k", "token --ca-file c", "token --machine m", "work token",
            "--margin 5 token", "token .", "token ..", "token -w", "token " + String(repeating: "a", count: 65), "token caf\u{e9}",
            "token --home ~u/d",
            "token --home=", "token --json --json", "token --home /a --home /b", "tokens", "usage --cached", "accounts list --json",
            "accounts current --json", "accounts current x", "accounts --home /d current", "current accounts",
            "prompt --format=", "token --home /d/", "token --home //d", "prompt --home /a//b",
            "prompt --format {acount}", "prompt --format {account", "prompt --format", "prompt --json", "prompt x", "prompt prompt",
            "prompt --format a --format b", "--format x prompt", "prompt --socket /s", "prompt --home ~/d", "prompt --verbose",
            "accounts", "list accounts", "accounts list x", "accounts list --home", "accounts --verbose list", "accounts --home /d list",
            "token --socket --json",
            "token --home /a/../b", "token --home ./d", "token --margin=-1",
        ])
    func handedOn(line: String) {
        #expect(Self.request(line) == .full, "\(line)")
    }

    @Test("Variables that change the store, the key, the endpoints or the line send every line on", arguments: FrontRequest.fullBinaryVariables)
    func variables(name: String) {
        #expect(Self.request("token work", ["HOME": "/h", name: "x"]) == .full)
        // Set but empty is unset, as the full binary reads them.
        #expect(Self.request("token work", ["HOME": "/h", name: ""]) == .token(.init(name: "work")))
    }

    @Test("A passphrase variable, even empty (the full binary refuses an empty one), sends the line on", arguments: FrontRequest.fullBinaryWhenSet)
    func passphrases(name: String) {
        #expect(Self.request("token work", ["HOME": "/h", name: ""]) == .full)
    }

    @Test("The data directory: --home, $CHAPPIE_HOME, $XDG_DATA_HOME, else ~/.local/share; the key file beside it or in the config directory")
    func dataDirectory() {
        func directory(_ home: String?, _ environment: [String: String]) -> (String, String)? {
            DataDirectory(home: home, environment: { environment[$0] }).map { ($0.path, $0.keyFile) }
        }
        #expect(directory("/d", [:])! == ("/d", "/d/chappie.key"))
        #expect(directory(nil, ["CHAPPIE_HOME": "/c", "HOME": "/h"])! == ("/c", "/c/chappie.key"))
        // `~` is the user database's home to the full binary, not HOME: its to resolve.
        #expect(directory(nil, ["CHAPPIE_HOME": "~/c", "HOME": "/h"]) == nil)
        #expect(directory(nil, ["HOME": "/h"])! == ("/h/.local/share/chappie", "/h/.config/chappie/chappie.key"))
        #expect(directory(nil, ["HOME": "/h", "XDG_DATA_HOME": "/x", "XDG_CONFIG_HOME": "/y"])! == ("/x/chappie", "/y/chappie/chappie.key"))
        #expect(directory(nil, ["HOME": "/h", "XDG_DATA_HOME": "rel"])! == ("/h/.local/share/chappie", "/h/.config/chappie/chappie.key"))
        #expect(directory(nil, [:]) == nil)
    }

    @Test("A token's expiry from its claims; anything the full binary would read otherwise is left to it")
    func expiry() {
        func token(_ claims: String) -> String {
            "e30." + Array(claims.utf8).base64URL + ".c2ln"
        }
        #expect(AccessTokenClaims.expiry(of: token(#"{"exp":1764000000}"#)) == 1_764_000_000)
        #expect(AccessTokenClaims.expiry(of: token(#"{"exp":1764000000.5}"#)) == nil)
        #expect(AccessTokenClaims.expiry(of: token(#"{"exp":"1764000000"}"#)) == nil)
        #expect(AccessTokenClaims.expiry(of: token(#"{"exp":-1}"#)) == nil)
        #expect(AccessTokenClaims.expiry(of: token(#"{"exp":253402300800}"#)) == nil)
        #expect(AccessTokenClaims.expiry(of: token(#"[1]"#)) == nil)
        #expect(AccessTokenClaims.expiry(of: "a.b") == nil)
        #expect(AccessTokenClaims.expiry(of: "a..c") == nil)
        #expect(AccessTokenClaims.expiry(of: "a.e30=.c") == nil)
    }

    @Test("--json is Foundation's pretty-printed, sorted document; text it would escape is left to the full binary")
    func output() throws {
        let token = FrontToken(name: "work", accessToken: "a.b.c", expiresAt: 1_764_000_000, chatgptAccountID: "acct/1", fedramp: false, warning: nil)
        #expect(TokenOutput.render(token, json: false)! == ("a.b.c\n", ""))
        let json = try #require(TokenOutput.render(token, json: true))
        #expect(
            json.stdout == """
                {
                  "accessToken" : "a.b.c",
                  "account" : "work",
                  "chatgptAccountID" : "acct/1",
                  "expiresAt" : "2025-11-24T16:00:00Z",
                  "fedramp" : false
                }

                """)
        var quoted = token
        quoted.chatgptAccountID = "a\"b"
        #expect(TokenOutput.render(quoted, json: true) == nil)
        var control = token
        control.accessToken = "a\u{1b}[31m"
        #expect(TokenOutput.render(control, json: false) == nil)
        #expect(TokenOutput.iso8601(0) == "1970-01-01T00:00:00Z")
        #expect(TokenOutput.iso8601(253_402_300_799) == "9999-12-31T23:59:59Z")
    }
}

extension [UInt8] {
    /// base64url without padding.
    var base64URL: String {
        Data(self).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

@Suite("The front binary's readers know the store's newest schema")
struct StoreSchemaReviewTests {
    /// The front binary serves a store at exactly the migrations the full binary applies (one
    /// generated list), so a new migration keeps the fast path on. What the migration changes may
    /// still be something the front binary's raw reads must know (a setting that makes a store the
    /// full binary's, a column that changes a row's meaning): this fails until that is checked.
    @Test("The newest migration is one the front binary's readers were checked against")
    func newestMigrationReviewed() {
        #expect(
            StoreMigration.sqlite.last?.id == "0008_account_choice",
            "a new migration: check OpenedStore, StoredTokenReader, AccountsTable and ActiveAccount against it, then update this id")
    }
}
