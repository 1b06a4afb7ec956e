import HTTPTypes
import Hummingbird

/// Headers on every answer: a Content-Security-Policy that allows only the app's own
/// scripts, styles, images and API (no inline script or style, no other origin, no
/// framing), and no referrer, sniffing or caching of the API's answers.
public struct SecurityHeaders<Context: RequestContext>: RouterMiddleware {
    public static var contentSecurityPolicy: String {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    }

    public init() {}

    static var referrerPolicy: HTTPField.Name { HTTPField.Name("Referrer-Policy")! }
    static var crossOriginOpenerPolicy: HTTPField.Name { HTTPField.Name("Cross-Origin-Opener-Policy")! }
    static var frameOptions: HTTPField.Name { HTTPField.Name("X-Frame-Options")! }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError {
            response = WebResponses.refusal(error.status, error.body ?? error.status.reasonPhrase)
        }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[Self.referrerPolicy] = "no-referrer"
        response.headers[Self.crossOriginOpenerPolicy] = "same-origin"
        response.headers[.crossOriginResourcePolicy] = "same-origin"
        response.headers[Self.frameOptions] = "DENY"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}

/// Answers the app makes itself.
enum WebResponses {
    /// A refusal in plain words, as text (a program) or as the JSON error the pages read.
    static func refusal(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let error = DaemonGateway.errorAnswer(.init(status == .serviceUnavailable ? .busy : .permissionDenied, message), status: status)
        return json(error)
    }

    static func json(_ answer: DaemonGateway.Answer) -> Response {
        Response(status: answer.status, headers: [.contentType: "application/json; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(string: answer.body)))
    }
}
