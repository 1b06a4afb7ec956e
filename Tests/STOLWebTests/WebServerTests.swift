import Foundation
import Glibc
import Hummingbird
import Logging
import STOLTestFixtures
import STOLTransport
import XCTest
@testable import STOLWeb

/// The web app's own guarantees, on real sockets, with curl as the browser and, as root,
/// `setpriv` as another user of the machine: who may connect (the kernel's word, on the Unix
/// socket and on TCP), which names and origins it answers, the headers on every answer, the
/// assets' budget, and a stopped daemon told in plain words. The pages in a real browser
/// against real daemons: Tests/web/test_web_app.py.
final class WebServerTests: XCTestCase {
    private var directory = ""
    private var task: Task<Void, Error>?
    private var unixPath = ""
    private var port = 0
    private var curl = ""

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self, prefix: "stolweb")
        curl = try requireExecutable("/usr/bin/curl", debianPackage: "curl")
        // No daemon runs here: the pages' data is the browser test's; this is the app's own door.
        let runtime = directory + "/run"
        let unix = try WebEndpoint.bindUnix(path: directory + "/app/web.sock")
        let tcp = try WebEndpoint.bindLoopback(port: 0)
        guard case .tcp(_, let bound) = tcp.kind, case .unix(let path) = unix.kind else { return XCTFail("endpoints") }
        port = bound
        unixPath = path
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let application = WebApplication(gateway: DaemonGateway(paths: RuntimePaths(runtimeDirectory: runtime, stateDirectory: directory + "/state",
                                                                                   bundledDatabase: "")),
                                         version: "test")
        let server = WebServer(endpoints: [unix, tcp], application: application, logger: logger)
        task = Task { try await server.run() }
    }

    override func tearDown() {
        task?.cancel()
    }

    /// `curl` as this user (or `uid`), printing the status, the headers and the body.
    private func request(_ path: String, unix: Bool = false, uid: UInt32? = nil, headers: [String] = [],
                         method: String = "GET", body: String? = nil) throws -> (status: Int, headers: String, body: String) {
        // -q: no ~/.curlrc; the headers on standard error for this user only (curl 7.88 as
        // another user crashes opening /dev/stderr, which is root's terminal or file).
        var arguments = ["-q", "-sS", "-o", "-", "-w", "\n%{http_code}", "-X", method, "--max-time", "10"]
        if uid == nil { arguments += ["-D", "/dev/stderr"] }
        for header in headers { arguments += ["-H", header] }
        if let body { arguments += ["--data-binary", body] }
        if unix { arguments += ["--unix-socket", unixPath] }
        arguments.append("http://\(unix ? "localhost" : "127.0.0.1:\(port)")\(path)")
        let output: ProcessOutput
        if let uid {
            output = try ChildProcess.run("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", curl] + arguments)
        } else {
            output = try ChildProcess.run(curl, arguments)
        }
        let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.last ?? "") ?? 0
        return (status, output.stderr, lines.dropLast().joined(separator: "\n"))
    }

    func testTheOwnersRequests_areServed_onTheUnixSocketAndOnTCP() throws {
        let tcp = try request("/taxon/9689")
        XCTAssertEqual(tcp.status, 200)
        XCTAssertTrue(tcp.body.contains("<script type=\"module\" src=\"/assets/app.js\">"), tcp.body)
        let unix = try request("/compare/9689/9694", unix: true)
        XCTAssertEqual(unix.status, 200)
        XCTAssertEqual(try request("/no-such-page").status, 404)
    }

    /// Another user of the machine: refused on TCP by the uid the kernel says owns the
    /// connecting socket (sock_diag), and on the Unix socket by SO_PEERCRED (the socket
    /// opened to everyone here, to reach the check behind the directory's 0700).
    func testAnotherUsersConnection_isRefusedOnTheKernelsWord_onTCPAndOnTheUnixSocket() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root to act as another user (make test runs as root)") }
        let tcp = try request("/taxon/9689", uid: 60014)
        XCTAssertEqual(tcp.status, 403)
        let raw = try ChildProcess.run("/usr/bin/setpriv", ["--reuid=60014", "--regid=60014", "--clear-groups", curl, "-q", "-s", "-i",
                                                            "--max-time", "10", "http://127.0.0.1:\(port)/"])
        XCTAssertTrue(raw.stdout.contains("Content-Security-Policy: \(SecurityHeaders<BasicRequestContextStandIn>.contentSecurityPolicy)"),
                      "the refusal lacks the policy: \(raw.stdout)")
        XCTAssertTrue(tcp.body.contains("belongs to another user"), tcp.body)
        XCTAssertFalse(tcp.body.contains("<script"), "the refusal served a page")

        XCTAssertEqual(chmod(directory, 0o755), 0)
        XCTAssertEqual(chmod(directory + "/app", 0o755), 0)
        XCTAssertEqual(chmod(unixPath, 0o777), 0)
        let unix = try request("/taxon/9689", unix: true, uid: 60014)
        XCTAssertEqual(unix.status, 403, "\(unix.headers) \(unix.body)")
        XCTAssertEqual(try request("/", unix: true).status, 200, "the owner is still served")
    }

    /// The default socket is the user's alone before any check: a 0600 socket in a 0700 directory.
    func testTheDefaultSocket_isPrivateToItsOwner() throws {
        var status = stat()
        XCTAssertEqual(stat(unixPath, &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(directory + "/app", &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o700)
        guard getuid() == 0 else { return }
        let refused = try request("/", unix: true, uid: 60014)
        XCTAssertEqual(refused.status, 0, "another user connected to the private socket")
    }

    /// DNS rebinding: a page of another site whose name resolves to 127.0.0.1 sends its own
    /// name as Host. Loopback names are served on any port (an ssh -L tunnel's port is the laptop's).
    func testAForeignHost_isRefused_andLoopbackNamesAreServedOnAnyPort() throws {
        XCTAssertEqual(try request("/", headers: ["Host: evil.example"]).status, 421)
        XCTAssertEqual(try request("/", headers: ["Host: evil.example:\(port)"]).status, 421)
        XCTAssertEqual(try request("/", headers: ["Host: 127.0.0.1.evil.example"]).status, 421)
        XCTAssertEqual(try request("/", headers: ["Host: localhost.evil.example:8080"]).status, 421)
        XCTAssertEqual(try request("/", headers: []).status, 200)
        for host in ["localhost:8080", "localhost", "127.0.0.1:9999", "[::1]:8080", "stol.localhost:8080"] {
            XCTAssertEqual(try request("/", headers: ["Host: \(host)"]).status, 200, host)
        }
        XCTAssertTrue(RequestGuard<BasicRequestContextStandIn>(extraHosts: ["labbox"]).isAllowed(host: "labbox:8080"))
    }

    /// CSRF: a change must come from the app's own pages (Origin) as JSON.
    func testAChangeFromAForeignOrigin_isRefused_beforeItReachesADaemon() throws {
        let json = "Content-Type: application/json"
        let foreign = try request("/api/favorites", headers: [json, "Origin: http://evil.example"], method: "POST",
                                  body: #"{"toggle":{"taxonId":"9689"}}"#)
        XCTAssertEqual(foreign.status, 403)
        XCTAssertTrue(foreign.body.contains("own pages"), foreign.body)
        XCTAssertEqual(try request("/api/favorites", headers: [json, "Origin: null"], method: "POST", body: "{}").status, 403)
        let form = try request("/api/favorites", headers: ["Content-Type: text/plain", "Origin: http://127.0.0.1:\(port)"],
                               method: "POST", body: #"{"toggle":{"taxonId":"9689"}}"#)
        XCTAssertEqual(form.status, 415)
        // From the app's own origin the request passes on (no daemon runs here: a plain-words 503).
        let own = try request("/api/favorites", headers: [json, "Origin: http://127.0.0.1:\(port)"], method: "POST",
                              body: #"{"toggle":{"taxonId":"9689"}}"#)
        XCTAssertEqual(own.status, 503)
        XCTAssertTrue(own.body.contains("The favorites service is not running"), own.body)
        XCTAssertFalse(own.body.contains("Error("), "an internal error's text reached the page: \(own.body)")
    }

    func testEveryAnswer_carriesAStrictContentSecurityPolicy() throws {
        for (path, method, headers) in [("/", "GET", [String]()), ("/assets/app.js", "GET", []), ("/nope", "GET", []),
                                        ("/", "GET", ["Host: evil.example"]), ("/api/app", "GET", []),
                                        ("/api/taxonomy", "POST", ["Origin: http://evil.example", "Content-Type: application/json"])] {
            let answer = try request(path, headers: headers, method: method, body: method == "POST" ? "{}" : nil)
            let csp = answer.headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-security-policy:") }
            XCTAssertEqual(csp.map { String($0.split(separator: ":", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces) },
                           SecurityHeaders<BasicRequestContextStandIn>.contentSecurityPolicy, "\(method) \(path)")
        }
        let policy = SecurityHeaders<BasicRequestContextStandIn>.contentSecurityPolicy
        XCTAssertTrue(policy.contains("default-src 'none'"))
        XCTAssertTrue(policy.contains("script-src 'self';"))
        XCTAssertFalse(policy.contains("unsafe-inline"))
        XCTAssertFalse(policy.contains("http"), "the policy names another origin")
    }

    /// Everything the first page loads, within 200 KB, and nothing from another origin.
    func testTheFirstPage_loadsOnlyItsOwnAssets_within200KB() throws {
        let shell = try request("/").body
        let referenced = shell.matches(of: /(?:src|href)="([^"#]+)"/).map { String($0.1) }
        XCTAssertFalse(referenced.isEmpty)
        var total = shell.utf8.count
        for reference in referenced where reference.hasPrefix("/assets/") {
            let asset = try request(reference)
            XCTAssertEqual(asset.status, 200, reference)
            total += asset.body.utf8.count
        }
        XCTAssertTrue(referenced.allSatisfy { $0.hasPrefix("/") && !$0.hasPrefix("//") }, "\(referenced)")
        XCTAssertLessThanOrEqual(total, 200_000)
        for asset in WebAssets.all.values {
            let text = String(decoding: asset.bytes, as: UTF8.self)
            XCTAssertNil(text.range(of: #"(src|href)=["']?(https?:)?//"#, options: .regularExpression), "an asset names another origin")
            XCTAssertFalse(text.contains("style=\""), "inline style, which the CSP forbids")
        }
    }

    /// The administrator's favourites requests (backup, restore) and forget-me are not
    /// passed on; a request that is not the protocol's JSON is a typed error.
    func testRequestsTheAppDoesNotPassOn_areTypedErrors() async throws {
        let gateway = DaemonGateway(paths: RuntimePaths(runtimeDirectory: directory + "/none", stateDirectory: directory, bundledDatabase: ""))
        for body in [#"{"backup":{}}"#, #"{"prepareRestore":{}}"#, #"{"forgetMe":{}}"#] {
            let answer = await gateway.favorites(body)
            XCTAssertEqual(answer.status, .badRequest, body)
            XCTAssertTrue(answer.body.contains("ERROR_CODE_INVALID_REQUEST"), answer.body)
        }
        let notJSON = await gateway.taxonomy("detail 9606")
        XCTAssertEqual(notJSON.status, .badRequest)
        let unknownField = await gateway.taxonomy(#"{"detail":{"taxonId":"9606","colour":"red"}}"#)
        XCTAssertEqual(unknownField.status, .badRequest)
        let nothing = await gateway.taxonomy("{}")
        XCTAssertEqual(nothing.status, .badRequest)
        XCTAssertTrue(nothing.body.contains("names no operation"), nothing.body)
    }
}

/// A request context type for naming the middlewares' static members in tests.
typealias BasicRequestContextStandIn = Hummingbird.BasicRequestContext
