import ChappieNet
import Testing

@Suite("libcurl is loaded on the first request, with a clear error when it is missing")
struct CurlLoadingTests {
    @Test("A library that cannot be loaded: a non-transient libraryUnavailable error naming it and the package to install")
    func missingLibrary() {
        let result = Curl.load("libcurl-chappie-missing.so.4")
        guard case .failure(let error) = result else {
            Issue.record("a library that does not exist was loaded")
            return
        }
        #expect(error.code == .libraryUnavailable)
        #expect(!error.isTransient)
        #expect(error.message.contains("libcurl-chappie-missing.so.4"))
        #expect(error.message.contains("apt-get install libcurl4"))
    }

    @Test("A library without curl's functions is refused, naming the first one missing")
    func notCurl() {
        // The C library is loaded already and has none of curl's symbols.
        guard case .failure(let error) = Curl.load("libc.so.6") else {
            Issue.record("libc was taken for libcurl")
            return
        }
        #expect(error.message.contains("curl_global_init"))
    }

    @Test("The real libcurl loads, and its version is known")
    func realLibrary() {
        #expect(Curl.version?.isEmpty == false)
        #expect(Curl.unavailableReason == nil)
    }
}
