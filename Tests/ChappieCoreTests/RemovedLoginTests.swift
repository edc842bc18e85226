import ChappieCore
import Testing

@Suite("How a removed entry names its login")
struct RemovedLoginTests {
    @Test("The login is the detail's end: found after a note and before a pool's machine; an id that only begins alike is another")
    func names() {
        let info = ChappieAccountInfo(email: nil, userID: "user-1", accountID: "acct-1", plan: nil, isFedRAMPAccount: false)
        let longer = ChappieAccountInfo(email: nil, userID: "user-12", accountID: "acct-1", plan: nil, isFedRAMPAccount: false)
        let detail = RemovedLogin.detail(info, note: "its refresh token was revoked at the issuer")
        #expect(detail == "its refresh token was revoked at the issuer; login chatgpt-account=acct-1 chatgpt-user=user-1")
        #expect(RemovedLogin.names(info, in: detail))
        #expect(RemovedLogin.names(info, in: detail + " (on m1)"))
        #expect(!RemovedLogin.names(info, in: RemovedLogin.detail(longer, note: "")))
        #expect(!RemovedLogin.names(longer, in: detail))
        #expect(!RemovedLogin.names(ChappieAccountInfo(email: "a@b", userID: nil, accountID: nil, plan: nil, isFedRAMPAccount: false), in: detail))
    }
}
