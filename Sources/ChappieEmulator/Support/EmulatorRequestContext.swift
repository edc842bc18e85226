import Hummingbird
import NIOCore

/// The request context of the emulator's routes: Hummingbird's basics plus the client's port,
/// so the emulator can count the connections a client opened.
struct EmulatorRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The client's source port; one per TCP connection.
    let clientPort: Int?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        clientPort = source.channel.remoteAddress?.port
    }
}
