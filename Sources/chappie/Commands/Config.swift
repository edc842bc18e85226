import ArgumentParser
import ChappieService
import ChappieStore
import Foundation

extension ChappieCommand {
    /// `chappie config …`: settings kept in the store.
    struct Config: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read and change settings: codex-home (where `accounts switch` writes auth.json), usage-retention (how long `usage prune` keeps readings).",
            subcommands: [Get.self, Set.self, Unset.self])
    }
}

/// The settings `chappie config` knows.
enum SettingName: String, ExpressibleByArgument, CaseIterable {
    case codexHome = "codex-home"
    case usageRetention = "usage-retention"
}

extension ChappieCommand.Config {
    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a setting (empty when unset).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The setting: codex-home.") var setting: SettingName

        func run() async throws {
            let store = try global.openStore().store
            let value: String? = switch setting {
            case .codexHome: try store.defaultCodexHome()
            case .usageRetention: try store.usageRetention().map { "\(Int($0) / 86400)d" }
            }
            if global.json { try JSONOutput.print([setting.rawValue: value]) } else { print(value ?? "") }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a setting.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The setting: codex-home.") var setting: SettingName
        @Argument(help: "Its value.") var value: String

        func run() async throws {
            let store = try global.openStore().store
            let shown: String
            switch setting {
            case .codexHome:
                shown = expandedPath(value).standardizedFileURL.path
                try store.setDefaultCodexHome(shown)
            case .usageRetention:
                let duration = try parseDuration(value)
                try store.setUsageRetention(Double(duration.components.seconds))
                shown = value
            }
            if !global.json { print("\(setting.rawValue) = \(shown)") } else { try JSONOutput.print([setting.rawValue: shown]) }
        }
    }

    struct Unset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Clear a setting.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The setting: codex-home.") var setting: SettingName

        func run() async throws {
            let store = try global.openStore().store
            switch setting {
            case .codexHome: try store.setDefaultCodexHome(nil)
            case .usageRetention: try store.setUsageRetention(nil)
            }
            if !global.json { print("\(setting.rawValue) cleared") } else { try JSONOutput.print([setting.rawValue: String?.none]) }
        }
    }
}
