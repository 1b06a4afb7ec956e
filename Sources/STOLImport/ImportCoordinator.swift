import Foundation
import Glibc
import Logging
import STOLProtocol
import STOLRuntime
import Synchronization

/// `stol-importd`'s handler: the small, trusted coordinator that owns the
/// reference database and the activation state (ARCHITECTURE.md §1).
///
/// It never parses untrusted bytes: it checks the caller, the file size (fstat)
/// and that no other import runs, hands the descriptor to a fresh verifier and
/// relays its progress. Installing a verified database, activation, deactivation
/// and deletion are declared and answer UNIMPLEMENTED until built.
public final class ImportCoordinator: StreamingFramedService {
    public typealias Request = Stol_V1_ImportRequest
    public typealias Response = Stol_V1_ImportResponse

    private let paths: RuntimePaths
    private let adminGroupID: UInt32?
    private let importRunning = Mutex(false)

    /// - Parameter adminGroupID: members may import; nil means root only.
    public init(paths: RuntimePaths, adminGroupID: UInt32?) {
        self.paths = paths
        self.adminGroupID = adminGroupID
    }

    /// Removes staging files a killed import left behind.
    public func removeStaleStagingFiles(logger: Logger) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: paths.stagingDirectory)) ?? []
        for name in names where name.hasPrefix("stol_import_") {
            try? FileManager.default.removeItem(atPath: paths.stagingDirectory + "/" + name)
            logger.notice("removed stale staging file", metadata: ["file": "\(name)"])
        }
    }

    public func respond(to request: Request, context: RequestContext, send: (Response) throws -> Void) {
        do {
            guard context.peer.isRootOrMember(ofGroup: adminGroupID) else {
                throw ImportError.permissionDenied(
                    "only root and members of the admin group may manage reference databases")
            }
            switch request.body {
            case .status:
                var response = Response()
                response.status = status()
                try send(response)
            case .importFile:
                try importFile(context: context, send: send)
            case .activate:
                throw ImportError.notImplemented("activating the reference database is not implemented yet")
            case .deactivate:
                throw ImportError.notImplemented("deactivating the reference database is not implemented yet")
            case .deleteReference:
                throw ImportError.notImplemented("deleting the reference database is not implemented yet")
            case nil:
                throw request.missingBodyError
            }
        } catch let error as ProtocolErrorConvertible {
            context.logger.info("import request refused", metadata: ["code": "\(error.protocolError.code.name)"])
            try? send(Response(requestID: request.id, error: error.protocolError))
        } catch {
            // `send` threw: the client is gone.
        }
    }

    public func status() -> Stol_V1_ImportStatus {
        var status = Stol_V1_ImportStatus()
        var info = stat()
        if stat(paths.referenceDatabase, &info) == 0 {
            status.referencePresent = true
            status.referenceSizeBytes = UInt64(info.st_size)
        }
        status.referenceActive = status.referencePresent && ActivationState.read(path: paths.activationState).useReferenceDB
        status.importRunning = importRunning.withLock { $0 }
        return status
    }

    private func importFile(context: RequestContext, send: (Response) throws -> Void) throws {
        guard let descriptor = context.receivedFileDescriptor else { throw ImportError.missingFileDescriptor }
        let size = try FileChecks.size(of: descriptor.rawValue)
        let acquired = importRunning.withLock { running in
            if running { return false }
            running = true
            return true
        }
        guard acquired else { throw ImportError.importInProgress }
        defer { importRunning.withLock { $0 = false } }
        var received = Response()
        var progress = Stol_V1_ImportProgress()
        progress.stage = .received
        progress.fraction = 1
        received.progress = progress
        try send(received)

        let verifier: FrameSocket
        do {
            verifier = try FrameSocket.connect(path: paths.verifySocket,
                                               maximumIncomingFrameBytes: ProtocolLimits.maximumResponseFrameBytes,
                                               maximumOutgoingFrameBytes: ProtocolLimits.maximumRequestFrameBytes)
        } catch {
            throw ImportError.verifierUnavailable("\(error)")
        }
        defer { verifier.close() }
        var request = Stol_V1_VerifyRequest()
        request.id = 1
        var body = Stol_V1_VerifyFileRequest()
        body.sizeBytes = size
        request.verifyFile = body
        do {
            try verifier.send(request, passing: descriptor.rawValue)
        } catch {
            throw ImportError.verifierUnavailable("\(error)")
        }
        while true {
            let answer: Stol_V1_VerifyResponse
            do {
                answer = try verifier.receive(Stol_V1_VerifyResponse.self).message
            } catch {
                throw ImportError.verifierFailed("\(error)")
            }
            switch answer.result {
            case .progress(let progress):
                var relay = Response()
                relay.progress = progress
                try send(relay)
            case .error(let error):
                throw ProtocolError(error)
            case .chunk, .done:
                throw ImportError.notImplemented("installing a verified database is not implemented yet")
            case nil:
                throw ImportError.verifierFailed("an answer without a result")
            }
        }
    }
}
