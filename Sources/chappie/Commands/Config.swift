import ArgumentParser
import ChappieService
import ChappieStore
import Foundation

extension ChappieCommand {
    /// `chappie config …`: settings kept in the store.
    struct Config: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read and change settings (codex-home: where `accounts switch` writes auth.json).",
            subcommands: [Get.self, Set.self, Unset.self])
    }
}

/// The settings `chappie config` knows.
enum SettingName: String, ExpressibleByArgument, CaseIterable {
    case codexHome = "codex-home"
}

extension ChappieCommand.Config {
    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a setting (empty when unset).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The setting: codex-home.") var setting: SettingName

        func run() async throws {
            let value = try global.openStore().store.defaultCodexHome()
            if global.json { try JSONOutput.print([setting.rawValue: value]) } else { print(value ?? "") }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a setting.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The setting: codex-home.") var setting: SettingName
        @Argument(help: "Its value.") var value: String

        func run() async throws {
            let path = URL(fileURLWithPath: (value as NSString).expandingTildeInPath).standardizedFileURL.path
            try global.openStore().store.setDefaultCodexHome(path)
            if !global.json { print("\(setting.rawValue) = \(path)") } else { try JSONOutput.print([setting.rawValue: path]) }
        }
    }

    struct Unset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Clear a setting.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The setting: codex-home.") var setting: SettingName

        func run() async throws {
            try global.openStore().store.setDefaultCodexHome(nil)
            if !global.json { print("\(setting.rawValue) cleared") } else { try JSONOutput.print([setting.rawValue: String?.none]) }
        }
    }
}
