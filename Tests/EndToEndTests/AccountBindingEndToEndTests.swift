import ChappieTestSupport
import Foundation
import Testing

@Suite("Accounts per directory: chappie bind, the choice's order, and files another user could change")
struct AccountBindingEndToEndTests {
    @Test("bind writes .chappie-account; commands below it use that account unless a name or $CHAPPIE_ACCOUNT says otherwise; unbind removes it")
    func bindAndChoose() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "add", "home"]).status == 0)
            #expect(try await testbed.chappie(["accounts", "switch", "home"]).status == 0)
            let project = testbed.home.appendingPathComponent("project")
            let below = project.appendingPathComponent("src/deep")
            try FileManager.default.createDirectory(at: below, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])

            let bound = try await testbed.chappie(["bind", "work"], directory: project)
            #expect(bound.status == 0, "\(bound.stderr)")
            let file = project.appendingPathComponent(".chappie-account")
            #expect(try String(contentsOf: file, encoding: .utf8) == "work\n")
            #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int) == 0o644)

            // From below: the binding, and why.
            let current = try await testbed.chappie(["accounts", "current"], directory: below)
            #expect(current.stdout == "work\n")
            #expect(current.stderr.contains("from \(file.path)"), "\(current.stderr)")
            let asked = try await testbed.chappie(["ask", "hello"], directory: below)
            #expect(asked.status == 0, "\(asked.stderr)")
            #expect(asked.stderr.contains("— work, "), "\(asked.stderr)")
            // A name, or $CHAPPIE_ACCOUNT, comes first; outside the tree the active account.
            #expect(try await testbed.chappie(["ask", "hi", "--account", "home"], directory: below).stderr.contains("— home, "))
            let environment = try await testbed.chappie(["accounts", "current"], environment: ["CHAPPIE_ACCOUNT": "home"], directory: below)
            #expect(environment.stdout == "home\n")
            #expect(environment.stderr.contains("$CHAPPIE_ACCOUNT"))
            let outside = try await testbed.chappie(["accounts", "current"], directory: testbed.home)
            #expect(outside.stdout == "home\n")
            #expect(outside.stderr.contains("the active account"))

            // --json has the account and the file (docs/json.md).
            let json = try await testbed.chappie(["bind", "work", "--json"], directory: project)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(object["account"] as? String == "work")
            #expect(object["file"] as? String == file.path)

            // unbind removes it; a second time there is nothing to remove.
            let unbound = try await testbed.chappie(["unbind", "--json"], directory: project)
            #expect(unbound.status == 0)
            #expect(unbound.stdout.contains("\"removed\" : true"), "\(unbound.stdout)")
            #expect(!FileManager.default.fileExists(atPath: file.path))
            #expect(try await testbed.chappie(["unbind"], directory: project).stdout.contains("has no .chappie-account"))
            // Binding to an account that does not exist is refused, and writes nothing.
            #expect(try await testbed.chappie(["bind", "ghost"], directory: project).status == 1)
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
    }

    @Test(
        "The search for a binding stops at a file system's boundary, and --best passes a binding over",
        .enabled(if: canMountPrivately, "needs root and unshare -m to mount a file system below the bound directory"))
    func boundaries() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            for name in ["work", "home"] { #expect(try await testbed.chappie(["accounts", "add", name]).status == 0) }
            #expect(try await testbed.chappie(["accounts", "switch", "home"]).status == 0)
            let project = testbed.home.appendingPathComponent("project")
            let mounted = project.appendingPathComponent("mounted")
            try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            #expect(try await testbed.chappie(["bind", "work"], directory: project).status == 0)
            // Below the bound directory on the same file system: the binding.
            #expect(try await testbed.chappie(["accounts", "current"], directory: mounted).stdout == "work\n")
            // The same directory with another file system mounted on it: the binding is above the boundary.
            let chappie = try BuiltProducts.executable("chappie").path
            let across = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/unshare"),
                [
                    "-m", "sh", "-c",
                    #"mount -t tmpfs -o size=1m,mode=0755 tmpfs "$1" && cd "$1" && program="$2" && shift 2 && exec "$program" "$@""#,
                    "sh", mounted.path, chappie, "accounts", "current",
                ] + testbed.service,
                environment: ["HOME": testbed.userHome.path])
            #expect(across.status == 0, "\(across.stderr)")
            #expect(across.stdout == "home\n", "\(across.stdout)\(across.stderr)")
            #expect(across.stderr.contains("the active account"), "\(across.stderr)")
            // --best chooses by headroom, whatever the directory binds: work is bound, home has more room.
            let listed = JSONDocument(Data(try await testbed.chappie(["accounts", "list", "--json"]).stdout.utf8))
            let index = try #require((0..<2).first { listed.string($0, "name") == "work" })
            let work = try #require(listed.string(index, "chatgptAccountID"))
            _ = try await testbed.control("/_emulator/accounts/\(work)/usage", method: "POST", body: #"{"five_hour_used_percent":90}"#)
            #expect(try await testbed.chappie(["usage", "poll", "--all"]).status == 0)
            let best = try await testbed.chappie(["exec", "--best", "--", "sh", "-c", "echo $CHAPPIE_ACCOUNT"], directory: project)
            #expect(best.stdout == "home\n", "\(best.stdout)\(best.stderr)")
            #expect(best.status == 0, "\(best.stderr)")
        }
    }

    @Test("A binding to no account, or to no name, fails naming the file; one another user could change is passed over with a warning")
    func badBindings() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            #expect(try await testbed.chappie(["accounts", "add", "work"]).status == 0)
            let project = testbed.home.appendingPathComponent("elsewhere")
            try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            let file = project.appendingPathComponent(".chappie-account")

            try Data("ghost\n".utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
            let missing = try await testbed.chappie(["ask", "hi"], directory: project)
            #expect(missing.status == 1)
            #expect(missing.stderr.contains(file.path) && missing.stderr.contains("ghost"), "\(missing.stderr)")
            let current = try await testbed.chappie(["accounts", "current"], directory: project)
            #expect(current.status == 1)
            #expect(current.stderr.contains("chappie unbind"), "\(current.stderr)")

            try Data("not a name!\n".utf8).write(to: file)
            let broken = try await testbed.chappie(["token"], directory: project)
            #expect(broken.status == 2)
            #expect(broken.stderr.contains(file.path), "\(broken.stderr)")

            // Writable by others: passed over, with a warning; the active account is used.
            try Data("ghost\n".utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: file.path)
            let passed = try await testbed.chappie(["accounts", "current"], directory: project)
            #expect(passed.status == 0, "\(passed.stderr)")
            #expect(passed.stdout == "work\n")
            #expect(passed.stderr.contains("can be written by other users"), "\(passed.stderr)")

            // A link is never followed.
            try FileManager.default.removeItem(at: file)
            let target = testbed.home.appendingPathComponent("target")
            try Data("ghost\n".utf8).write(to: target)
            try FileManager.default.createSymbolicLink(at: file, withDestinationURL: target)
            let linked = try await testbed.chappie(["accounts", "current"], directory: project)
            #expect(linked.stdout == "work\n")
            #expect(linked.stderr.contains("symbolic link"), "\(linked.stderr)")
        }
    }
}
