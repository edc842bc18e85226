package import ChappieCore
package import ChappieNet
import Chappie
import Foundation

extension ChappieHTTPRequest {
    /// The headers every backend request of an account carries (protocol.md §6.1, §8.5): its token,
    /// its ChatGPT account, chappie's originator, and the FedRAMP flag when it has one.
    package mutating func authorize(as account: Account, token: String, originator: String) {
        headers["Authorization"] = "Bearer \(token)"
        if let id = account.info.accountID { headers["ChatGPT-Account-Id"] = id }
        headers["originator"] = originator
        if account.info.isFedRAMPAccount { headers["X-OpenAI-Fedramp"] = "true" }
    }
}

extension TokenService {
    /// Sends a backend request as an account: with a token fresh for 5 minutes, once more with a
    /// forced refresh after a 401 (unless `refreshingOn401` is `false`: a refresh rotates the
    /// refresh token, which an endpoint of no consequence should not cause), within `timeout` each.
    /// A 2xx reply is returned.
    ///
    /// - Throws: ``ServiceError`` `.unavailable` for no answer, a 429 or a 5xx (try again later),
    ///   `.invalidInput` for any other status; ``ChappieAuthError`` when the tokens cannot be refreshed.
    package func send(
        for account: Account, over http: ChappieHTTPClient, to what: String, refreshingOn401: Bool = true, timeout: Duration = .seconds(30),
        _ make: () -> ChappieHTTPRequest
    ) async throws -> ChappieHTTPResponse {
        let refresher = refresher(margin: .seconds(300))
        var fresh = try await refresher.validCredentials(for: account)
        func attempt(_ fresh: TokenRefresher.Fresh) async throws -> ChappieHTTPResponse {
            var request = make()
            request.authorize(as: fresh.account, token: fresh.credentials.accessToken, originator: oauth.endpoints.originator)
            request.totalTimeout = timeout
            do {
                return try await http.execute(request)
            } catch let error as ChappieHTTPClientError {
                throw ServiceError(.unavailable, "\(what): \(error.description)")
            }
        }
        var response = try await attempt(fresh)
        if response.status == 401, refreshingOn401 {
            fresh = try await refresher.validCredentials(for: fresh.account, force: true)
            response = try await attempt(fresh)
        }
        guard response.isSuccess else {
            let passes = response.status == 429 || response.status >= 500
            throw ServiceError(passes ? .unavailable : .invalidInput, "\(what) answered HTTP \(response.status) for \(account.name)")
        }
        return response
    }
}
