public import ChappieCore
public import ChappieStore
public import Foundation

/// Which account an SDK session or client uses, where the store is, and which services it talks to.
///
/// Several configurations with different `account` names are several accounts.
///
/// ```swift
/// var configuration = ChappieConfiguration(account: try AccountName("work"))
/// configuration.refreshMargin = .seconds(600)
/// let session = await Chappie.authSession(configuration: configuration)
/// ```
public struct ChappieConfiguration: Sendable {
    /// The account slot (what the Keychain slot is on Apple platforms).
    public var account: AccountName
    /// Where the store is and where its key comes from (by default: the environment's).
    public var store: StoreOptions
    /// The issuer and backend; the real ones by default.
    public var endpoints: ChappieEndpoints
    /// Tokens expiring within this margin are refreshed before use. Default: 5 minutes.
    public var refreshMargin: Duration

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - account: The account slot; `default` unless given.
    ///   - store: Store location and key source; from the environment by default.
    ///   - endpoints: The services; the real ones by default.
    ///   - refreshMargin: How early to refresh; 5 minutes by default.
    public init(
        account: AccountName = Self.defaultAccount, store: StoreOptions = StoreOptions(),
        endpoints: ChappieEndpoints = ChappieEndpoints(), refreshMargin: Duration = .seconds(300)
    ) {
        self.account = account
        self.store = store
        self.endpoints = endpoints
        self.refreshMargin = refreshMargin
    }

    /// The slot named `default`.
    public static let defaultAccount: AccountName = {
        // "default" follows the name rule.
        guard let name = try? AccountName("default") else { preconditionFailure("\"default\" is a valid account name") }
        return name
    }()
}
