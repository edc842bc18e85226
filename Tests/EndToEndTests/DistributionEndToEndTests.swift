import ChappieTestSupport
import Foundation
import Testing

/// `make dist`'s packages, made by scripts/dist.sh from the binaries this build made, installed as
/// a user without a Swift toolchain installs them.
@Suite("The release tarball and .deb install chappie where no toolchain is, and it runs", .tags(.slow))
struct DistributionEndToEndTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs the installed front binary with the testbed's service, in a data directory of its own.
    private func check(_ chappie: URL, _ testbed: ChappieTestbed, _ what: String) async throws {
        let version = try await runProcess(chappie, ["--version"])
        let built = try await runProcess(try BuiltProducts.executable("chappie"), ["--version"])
        #expect(version.status == 0 && version.stdout == built.stdout, "\(what): \(version.stderr)")
        let home = testbed.home.appendingPathComponent("home-\(what)")
        let doctor = try await runProcess(
            chappie, ["doctor", "--home", home.path, "--issuer", testbed.emulator.issuer, "--backend", testbed.emulator.backend],
            environment: ["HOME": testbed.userHome.path, "CHAPPIE_KEY_FILE": nil, "CHAPPIE_PASSPHRASE": nil])
        #expect(doctor.status == 0, "\(what): \(doctor.stdout) \(doctor.stderr)")
        #expect(doctor.stdout.contains("libsodium") && doctor.stdout.contains("issuer"), "\(what): \(doctor.stdout)")
        let listed = try await runProcess(chappie, ["accounts", "list", "--home", home.path], environment: ["HOME": testbed.userHome.path])
        #expect(listed.status == 0 && listed.stdout.contains("No accounts yet"), "\(what): \(listed.stderr)")
    }

    @Test(
        "dist.sh: the tarball's install.sh PREFIX and the .deb unpacked into a clean tree each give a working chappie; the .deb declares what it needs"
    )
    func packagesInstallAndRun() async throws {
        let testbed = try await ChappieTestbed.start()
        try await whileRunning(testbed) {
            let out = testbed.home.appendingPathComponent("dist")
            let made = try await runProcess(
                Self.root.appendingPathComponent("scripts/dist.sh"),
                [BuiltProducts.directory.path, try BuiltProducts.executable("generate-manual").path, out.path], timeout: .seconds(300))
            #expect(made.status == 0, "\(made.stderr)")
            let files = try FileManager.default.contentsOfDirectory(atPath: out.path)
            let tarball = try #require(files.first { $0.hasSuffix(".tar.gz") }, "\(files)")
            let package = try #require(files.first { $0.hasSuffix(".deb") }, "\(files)")

            // The tarball, into a PREFIX of its own.
            let unpacked = testbed.home.appendingPathComponent("unpacked")
            try FileManager.default.createDirectory(at: unpacked, withIntermediateDirectories: true)
            #expect(
                try await runProcess(URL(fileURLWithPath: "/usr/bin/tar"), ["-C", unpacked.path, "-xzf", out.appendingPathComponent(tarball).path])
                    .status == 0)
            let folder = unpacked.appendingPathComponent(String(tarball.dropLast(".tar.gz".count)))
            let prefix = testbed.home.appendingPathComponent("prefix")
            let installed = try await runProcess(folder.appendingPathComponent("install.sh"), [prefix.path])
            #expect(installed.status == 0 && installed.stdout.contains("\(prefix.path)/bin/chappie doctor"), "\(installed.stderr)")
            for part in [
                "bin/chappie", "libexec/chappie/chappie-full", "share/man/man1/chappie.1", "share/bash-completion/completions/chappie",
                "share/doc/chappie/team-pool.md",
            ] {
                #expect(FileManager.default.fileExists(atPath: prefix.appendingPathComponent(part).path), "\(part)")
            }
            // Stripped: no symbol table left.
            let symbols = try await runProcess(URL(fileURLWithPath: "/usr/bin/nm"), [prefix.appendingPathComponent("bin/chappie").path])
            #expect(symbols.stderr.contains("no symbols"), "\(symbols.stderr)")
            try await check(prefix.appendingPathComponent("bin/chappie"), testbed, "tarball")

            // The .deb, unpacked into a clean tree as dpkg would install it.
            let tree = testbed.home.appendingPathComponent("tree")
            let deb = out.appendingPathComponent(package).path
            #expect(try await runProcess(URL(fileURLWithPath: "/usr/bin/dpkg-deb"), ["-x", deb, tree.path]).status == 0)
            try await check(tree.appendingPathComponent("usr/bin/chappie"), testbed, "deb")
            let depends = try await runProcess(URL(fileURLWithPath: "/usr/bin/dpkg-deb"), ["-f", deb, "Depends"]).stdout
            let declared = Set(depends.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
            #expect(declared.isSuperset(of: ["libsodium23", "libcurl4", "libsqlite3-0"]), "\(depends)")
            // Every system library the binaries link is in a package the .deb names (the Swift
            // runtime of a debug build is the toolchain's; a release build has it inside).
            for binary in ["usr/bin/chappie", "usr/libexec/chappie/chappie-full"] {
                let linked = try await runProcess(URL(fileURLWithPath: "/usr/bin/ldd"), [tree.appendingPathComponent(binary).path]).stdout
                for line in linked.split(separator: "\n") {
                    let words = line.split(separator: " ")
                    guard words.count >= 3, words[1] == "=>", words[2].hasPrefix("/lib") || words[2].hasPrefix("/usr/lib") else { continue }
                    // With /usr merged, dpkg may know the file under the other of its two paths.
                    let path = String(words[2])
                    let other = path.hasPrefix("/usr/") ? String(path.dropFirst(4)) : "/usr" + path
                    var owner = try await runProcess(URL(fileURLWithPath: "/usr/bin/dpkg"), ["-S", path])
                    if owner.status != 0 { owner = try await runProcess(URL(fileURLWithPath: "/usr/bin/dpkg"), ["-S", other]) }
                    let name = owner.stdout.split(separator: ":").first.map(String.init) ?? ""
                    #expect(declared.contains(name), "\(binary) links \(words[2]) from \(name), which the .deb does not declare")
                }
            }
        }
    }

    @Test("A front binary without chappie-full exits 78 and says how to reinstall")
    func frontAlone() async throws {
        let directory = try TestTokens.temporaryDirectory("chappie-front-alone")
        defer { try? FileManager.default.removeItem(at: directory) }
        let lone = directory.appendingPathComponent("chappie")
        try FileManager.default.copyItem(at: try BuiltProducts.executable("chappie"), to: lone)
        let result = try await runProcess(lone, ["config", "list", "--home", directory.appendingPathComponent("home").path])
        #expect(result.status == 78, "\(result.stderr)")
        #expect(
            result.stderr.contains("chappie-full")
                && result.stderr.contains("Reinstall chappie: sudo dpkg -i chappie_VERSION_ARCH.deb, or ./install.sh PREFIX"))
    }
}
