/// Constants of the real service that the emulator reproduces (docs/protocol.md §0, §1, §6).
enum OpenAIProtocol {
    /// The Codex CLI's OAuth client id.
    static let clientID = "app_EMoamEEZ73f0CkXaXp7hrann"
    /// The real issuer, which the device flow's redirect_uri names.
    static let realIssuer = "https://auth.openai.com"
    /// The path of the redirect_uri of the device flow's code exchange.
    static let deviceCallbackPath = "/deviceauth/callback"
    /// The claims namespace for ChatGPT facts.
    static let authClaim = "https://api.openai.com/auth"
    /// The claims namespace for the profile.
    static let profileClaim = "https://api.openai.com/profile"
    /// The 5-hour window, in seconds.
    static let fiveHourWindow = 18_000
    /// The weekly window, in seconds.
    static let weeklyWindow = 604_800
}
