import HTTPTypes
import Hummingbird

/// What a request must be before the app reads it further: addressed to this app by a
/// name that only this machine answers to (a DNS-rebinding page has its own name in
/// `Host`), and, when it changes anything (any method but GET and HEAD), sent by the app's
/// own pages (`Origin` equal to the address it was sent to; a browser always sends it on
/// such requests) with a JSON body (which a cross-site form cannot send). Who may connect
/// at all is settled earlier, by the kernel (``ConnectionOwner``).
public struct RequestGuard<Context: RequestContext>: RouterMiddleware {
    /// Host names besides the loopback ones (`--allow-host`): a name the user's own
    /// tunnel or proxy uses.
    public let extraHosts: Set<String>

    public init(extraHosts: Set<String> = []) {
        self.extraHosts = Set(extraHosts.map { $0.lowercased() })
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let authority = request.head.authority, isAllowed(host: authority) else {
            return WebResponses.refusal(.misdirectedRequest,
                                        "This address is not the STOL web app's: open it as http://localhost:PORT/ "
                                        + "(the name your browser used is not one this machine answers to).")
        }
        if request.method != .get && request.method != .head {
            guard let origin = request.headers[.origin], origin == "http://" + authority || origin == "https://" + authority else {
                return WebResponses.refusal(.forbidden, "Changes are accepted from the app's own pages only (the Origin header differs).")
            }
            guard let type = request.headers[.contentType], type.lowercased().hasPrefix("application/json") else {
                return WebResponses.refusal(.unsupportedMediaType, "The API takes JSON (Content-Type: application/json).")
            }
        }
        return try await next(request, context)
    }

    /// Whether `authority` (`host[:port]`) names this machine's loopback: `localhost` and
    /// its subdomains (RFC 6761: never sent to DNS), `127.0.0.0/8`, `[::1]`, or an extra
    /// name. Any port: through `ssh -L` the browser's port is the laptop's.
    public func isAllowed(host authority: String) -> Bool {
        let host = Self.hostPart(of: authority.lowercased())
        if host == "localhost" || host.hasSuffix(".localhost") || host == "[::1]" { return true }
        if extraHosts.contains(host) { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    static func hostPart(of authority: String) -> String {
        if authority.hasPrefix("[") {
            guard let end = authority.firstIndex(of: "]") else { return authority }
            return String(authority[...end])
        }
        if let colon = authority.lastIndex(of: ":"), authority[authority.index(after: colon)...].allSatisfy(\.isNumber) {
            return String(authority[..<colon])
        }
        return authority
    }
}
