import ChappieText
import ArgumentParser
import ChappieCore
import ChappieService
import Foundation

extension ChappieCommand {
    /// `chappie config …`: settings kept in the store.
    struct Config: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "config",
            abstract:
                "Read and change settings: codex-home (where `accounts switch` writes auth.json), usage-retention (how long `usage prune` keeps readings), originator (how chappie names itself to the backend), ca-file (certificate authorities to trust as well); this machine's only: alert-webhook, alert-command, alert-at (the daemon's alerts).",
            subcommands: [List.self, Get.self, Set.self, Unset.self])
    }
}

extension ChappieCommand.Config {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "Show every setting, the value in effect and where it comes from.", aliases: ["ls"])
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            let listed =
                if let settings = try await global.existingServices()?.settings {
                    try await settings.list(caFileOption: global.caFile, environment: environment)
                } else {
                    SettingsService.list(stored: nil, caFileOption: global.caFile, environment: environment)
                }
            if global.json {
                struct Entry: Encodable {
                    var setting: String
                    var value: String?
                    var source: String
                }
                try JSONOutput.print(listed.map { Entry(setting: $0.key.rawValue, value: $0.value, source: $0.source) })
                return
            }
            var table = TextTable("SETTING", "VALUE", "SOURCE")
            for entry in listed { table.append(entry.key.rawValue, entry.value ?? "-", entry.source) }
            print(table.render())
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a setting (empty when unset).")
        @Argument(help: "The setting: codex-home, usage-retention, originator, ca-file, alert-webhook, alert-command or alert-at.")
        var setting: SettingsService.Key
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            guard let settings = try await global.existingServices()?.settings else {
                // No store yet: nothing is set.
                if global.json { try JSONOutput.print(SettingJSON(setting: setting.rawValue, value: nil)) } else { print("") }
                return
            }
            let value: String? =
                switch setting {
                case .codexHome: try await settings.defaultCodexHome()
                case .usageRetention: try await settings.usageRetention().map(DurationText.format)
                case .originator: try await settings.originator()
                case .caFile: try await settings.caFile()
                case .alertWebhook, .alertCommand, .alertAt: try settings.shown(setting)
                }
            if global.json { try JSONOutput.print(SettingJSON(setting: setting.rawValue, value: value)) } else { print(value ?? "") }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Change a setting.")
        @Argument(help: "The setting: codex-home, usage-retention, originator, ca-file, alert-webhook, alert-command or alert-at.")
        var setting: SettingsService.Key
        @Argument(help: "Its value.") var value: String
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let settings = try await global.services().settings
            let shown: String
            switch setting {
            case .codexHome:
                shown = expandedPath(value).standardizedFileURL.path
                try await settings.setDefaultCodexHome(shown)
            case .usageRetention:
                let duration = try parseDuration(value)
                try await settings.setUsageRetention(duration)
                shown = value
            case .originator:
                try await settings.setOriginator(value)
                shown = value
            case .caFile:
                shown = expandedPath(value).standardizedFileURL.path
                try await settings.setCAFile(shown)
            case .alertWebhook, .alertCommand, .alertAt:
                shown = try await settings.setLocal(setting, value) ?? ""
            }
            if !global.json {
                print("\(setting.rawValue) = \(shown)")
            } else {
                try JSONOutput.print(SettingJSON(setting: setting.rawValue, value: shown))
            }
        }
    }

    struct Unset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "unset", abstract: "Clear a setting.")
        @Argument(help: "The setting: codex-home, usage-retention, originator, ca-file, alert-webhook, alert-command or alert-at.")
        var setting: SettingsService.Key
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let settings = try await global.services().settings
            switch setting {
            case .codexHome: try await settings.setDefaultCodexHome(nil)
            case .usageRetention: try await settings.setUsageRetention(nil)
            case .originator: try await settings.setOriginator(nil)
            case .caFile: try await settings.setCAFile(nil)
            case .alertWebhook, .alertCommand, .alertAt: try await settings.setLocal(setting, nil)
            }
            if !global.json { print("\(setting.rawValue) cleared") } else { try JSONOutput.print(SettingJSON(setting: setting.rawValue, value: nil)) }
        }
    }
}

/// A setting as `config --json` prints it: its name and value (`null` when unset).
struct SettingJSON: Encodable {
    var setting: String
    var value: String?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(setting, forKey: .setting)
        try container.encode(value, forKey: .value)
    }

    private enum CodingKeys: String, CodingKey {
        case setting, value
    }
}
