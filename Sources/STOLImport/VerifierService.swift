import Glibc
import Logging
import STOLFormat
import STOLProtocol
import STOLRuntime

/// `stol-verifyd`'s handler: runs the checklist of seeds/000 §6.1 on the
/// untrusted file it is handed as a descriptor.
///
/// The verifier is the only process that parses untrusted bytes, and it runs as a
/// fresh, sandboxed process per import. Built so far: the caller check, the size
/// limits and the magic; the checksum, signature, decompression and database
/// checks answer UNIMPLEMENTED until they are built.
public struct VerifierService: StreamingFramedService {
    public typealias Request = Stol_V1_VerifyRequest
    public typealias Response = Stol_V1_VerifyResponse

    /// The uid allowed to ask (the import coordinator's); root is always allowed.
    private let allowedUID: UInt32

    public init(allowedUID: UInt32 = getuid()) {
        self.allowedUID = allowedUID
    }

    public func respond(to request: Request, context: RequestContext, send: (Response) throws -> Void) {
        do {
            try verify(request, context: context, send: send)
        } catch let error as ProtocolErrorConvertible {
            context.logger.notice("verification refused", metadata: ["code": "\(error.protocolError.code.name)"])
            try? send(Response(requestID: request.id, error: error.protocolError))
        } catch {
            // `send` threw: the coordinator is gone; nothing to answer.
        }
    }

    private func verify(_ request: Request, context: RequestContext, send: (Response) throws -> Void) throws {
        guard context.peer.uid == 0 || context.peer.uid == allowedUID else {
            throw ImportError.permissionDenied("only the import coordinator may use the verifier")
        }
        guard case .verifyFile = request.body else {
            throw request.missingBodyError
        }
        guard let descriptor = context.receivedFileDescriptor else { throw ImportError.missingFileDescriptor }
        let fd = descriptor.rawValue
        let size = try FileChecks.size(of: fd)
        try send(progress(.checkingHeader, 0))
        let prefix = try FileChecks.read(fd, count: StolHeader.size, at: 0)
        guard StolHeader.hasMagic(prefix) else { throw ImportError.notAStolFile }
        guard size >= UInt64(StolHeader.size) else { throw ImportError.fileTooSmall(bytes: size) }
        try send(progress(.checkingHeader, 1))
        throw ImportError.notImplemented(
            "the header is valid; checksum, signature and decompression checks are not implemented yet")
    }

    private func progress(_ stage: Stol_V1_ImportStage, _ fraction: Double) -> Response {
        var response = Response()
        var progress = Stol_V1_ImportProgress()
        progress.stage = stage
        progress.fraction = fraction
        response.progress = progress
        return response
    }
}
