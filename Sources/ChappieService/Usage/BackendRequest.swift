package import ChappieCore
package import ChappieNet

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
