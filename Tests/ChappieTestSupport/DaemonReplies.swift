/// Replies as chappie's daemon writes them on its socket, for the readers of both binaries.
public enum DaemonReplies {
    /// A `usage` reply: two accounts, the active one (work, reserve 80) with a reading of both
    /// windows, the weekly one binding.
    public static let usage = """
        {"ok":true,"accounts":[{"id":1,"uuid":"0b5e6b8e-2f0c-4d7e-9a53-6f1c2d3e4f50","name":"work","info":{"email":"w@example.com",\
        "plan":"pro","isFedRAMPAccount":false},"status":"ok","reservePercent":80,"createdAt":1789000000,"updatedAt":1789000000,\
        "isActive":true,"maxLeases":1},{"id":2,"uuid":"1b5e6b8e-2f0c-4d7e-9a53-6f1c2d3e4f51","name":"home","info":{"isFedRAMPAccount":false},\
        "status":"reauth_required","createdAt":1789000000.5,"updatedAt":1789000000,"isActive":false,"maxLeases":2}],\
        "usage":[1,{"accountID":1,"observedAt":1789999000.25,"source":"poll","limitID":"codex","snapshot":{"limitID":"codex",\
        "plan":"pro","shortWindow":{"usedPercent":42.4,"windowMinutes":300,"resetsAt":1790003600},"longWindow":{"usedPercent":90.5,\
        "windowMinutes":10080,"resetsAt":1790400000},"credits":{"hasCredits":true,"unlimited":false,"balance":"5"},"limitReached":false}}]}
        """
}
