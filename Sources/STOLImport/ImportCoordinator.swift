import Foundation
import Glibc
import Logging
import STOLFileSystem
import STOLFormat
import STOLImportCore
import STOLModel
import STOLProtocol
import STOLTransport
import Synchronization

/// `stol-importd`'s handler: the small, trusted coordinator that owns the
/// reference database and the activation state.
///
/// It never parses untrusted bytes (the privilege separation of OpenSSH's
/// monitor): it checks the caller, the file's size (`fstat`) and that no other
/// import runs, hands the descriptor to a fresh, sandboxed `stol-verifyd` and
/// relays its progress. The verified database comes back as `chunk` frames,
/// which it writes to `databases/.staging/stol_import_<uuid>.sqlite` and hashes;
/// only when the size and SHA-256 match the verifier's `done` (and the file is
/// not an older build of an installed release, and its ids are the installed
/// releases' namespace) does it fsync and rename it to `releases/<release>.sqlite`.
/// Anything else — a verifier that fails or dies, a client that leaves, a full
/// disk, this process killed — leaves every installed release and the activation
/// state as they were (the staging file is removed now, or at the next start).
public final class ImportCoordinator: StreamingFramedService {
    public typealias Request = Stol_V1_ImportRequest
    public typealias Response = Stol_V1_ImportResponse

    public struct Configuration: Sendable {
        /// Members may manage reference databases; nil means root only.
        public var adminGroupID: UInt32?
        /// A verifier that sends nothing for this long is given up on.
        public var verifierStallTimeout: Duration

        public init(adminGroupID: UInt32?, verifierStallTimeout: Duration = .seconds(120)) {
            self.adminGroupID = adminGroupID
            self.verifierStallTimeout = verifierStallTimeout
        }
    }

    /// The running import, for `status`.
    private struct Activity {
        var stage: Stol_V1_ImportStage
        var fraction: Double
    }

    public let store: ReferenceDatabaseStore
    private let configuration: Configuration
    private let pausePoints: TestPausePoints
    private let activity = Mutex<Activity?>(nil)
    /// Refused requests, logged without letting a flood of them flood the log.
    private let refusals = RateLimitedLog(first: "import request refused",
                                          more: "more import requests refused since the last one logged")

    public init(paths: RuntimePaths, configuration: Configuration, pausePoints: TestPausePoints = .disarmed) {
        self.store = ReferenceDatabaseStore(paths: paths)
        self.configuration = configuration
        self.pausePoints = pausePoints
    }

    private var paths: RuntimePaths { store.paths }

    public func respond(to request: Request, context: RequestContext, send: (Response) throws -> Void) {
        do {
            guard context.peer.isRootOrMember(ofGroup: configuration.adminGroupID) else {
                throw ImportError.permissionDenied(
                    "only root and members of the admin group may manage reference databases")
            }
            switch request.body {
            case .status:
                var response = Response()
                response.status = status()
                try send(response)
            case .importFile(let body):
                try importFile(body, context: context, send: send)
            case .activate(let body):
                let release = try store.activate(body.release)
                context.logger.notice("release activated as the default", metadata: ["release": "\(release)"])
                try send(done(release: release))
            case .deactivate:
                try store.deactivate()
                context.logger.notice("reference database deactivated")
                try send(done())
            case .deleteReference(let body):
                let removed = try store.delete(body.release)
                context.logger.notice("release deleted", metadata: ["release": "\(removed ?? "none installed")"])
                try send(done(release: removed ?? ""))
            case nil:
                throw request.missingBodyError
            }
        } catch let error as ImportError {
            if case .cancelled(let reason) = error {
                context.logger.notice("import cancelled", metadata: ["reason": "\(reason)"])
                return
            }
            refusals.record(code: error.protocolError.code.name, logger: context.logger)
            try? send(Response(requestID: request.id, error: error.protocolError))
        } catch let error as ProtocolErrorConvertible {
            refusals.record(code: error.protocolError.code.name, logger: context.logger)
            try? send(Response(requestID: request.id, error: error.protocolError))
        } catch {
            // `send` threw: the client is gone.
        }
    }

    public func status() -> Stol_V1_ImportStatus {
        var status = store.status()
        if let running = activity.withLock({ $0 }) {
            status.importRunning = true
            status.importStage = running.stage
            status.importFraction = running.fraction
        }
        return status
    }

    private func done(release: String = "") -> Response {
        var done = Stol_V1_ImportDone()
        done.status = status()
        done.release = release
        var response = Response()
        response.done = done
        return response
    }

    // MARK: Import

    private func importFile(_ body: Stol_V1_ImportFileRequest, context: RequestContext,
                            send: (Response) throws -> Void) throws {
        guard let descriptor = context.receivedFileDescriptor else { throw ImportError.missingFileDescriptor }
        let size: UInt64
        do {
            size = try StolFileLimits.checkedSize(ofDescriptor: descriptor.rawValue)
        } catch {
            throw ImportError.verification(error)
        }
        let acquired = activity.withLock { running in
            if running != nil { return false }
            running = Activity(stage: .received, fraction: 1)
            return true
        }
        guard acquired else { throw ImportError.importInProgress }
        defer { activity.withLock { $0 = nil } }
        func relay(_ progress: Stol_V1_ImportProgress) throws {
            activity.withLock { $0 = Activity(stage: progress.stage, fraction: progress.fraction) }
            var response = Response()
            response.progress = progress
            do { try send(response) } catch { throw ImportError.cancelled("the client closed the connection") }
        }
        var received = Stol_V1_ImportProgress()
        received.stage = .received
        received.fraction = 1
        received.bytesDone = size
        received.bytesTotal = size
        try relay(received)
        pausePoints.reached("import:received")
        let started = ContinuousClock.now

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
        var verifyBody = Stol_V1_VerifyFileRequest()
        verifyBody.sizeBytes = size
        request.verifyFile = verifyBody
        do {
            try verifier.send(request, passing: descriptor.rawValue)
        } catch {
            throw ImportError.verifierUnavailable("\(error)")
        }
        descriptor.close()  // the verifier has its own copy; this process never reads the file

        let staged: AtomicFile
        do {
            // The final name comes from the verified database (its release).
            staged = try AtomicFile(path: paths.releasesDirectory,
                                    stagingPath: paths.stagingDirectory + "/stol_import_\(UUID().uuidString.lowercased()).sqlite")
        } catch {
            throw ReferenceDatabaseStore.storageError(error)
        }
        defer { staged.discard() }
        let verified = try receiveVerifiedDatabase(from: verifier, into: staged, context: context, relay: relay)
        let verifySeconds = ContinuousClock.now - started

        let release = verified.hasProvenance ? verified.provenance.release : ReleaseName.unknown
        // Another release is never a downgrade: only an older build of the same one.
        if !body.allowDowngrade, let installed = store.reference(release)?.buildTime, !installed.isEmpty,
           !verified.buildTime.isEmpty, verified.buildTime < installed {
            throw ImportError.downgradeRefused(installed: installed, offered: verified.buildTime)
        }
        // Ids of another namespace would silently name other taxa for every user.
        if !body.allowIDNamespaceChange, verified.hasProvenance {
            let offered = verified.provenance.idNamespace
            if let installed = store.installedNamespaces().subtracting([offered]).sorted().first {
                throw ImportError.idNamespaceMismatch(installed: installed, offered: offered)
            }
        }
        do {
            try staged.sync()  // the long fsync, outside the store's lock
        } catch {
            throw ReferenceDatabaseStore.storageError(error)
        }
        pausePoints.reached("import:staged")
        if context.peerHasClosed { throw ImportError.cancelled("the client closed the connection") }
        try store.install(staged, release: release)
        pausePoints.reached("import:installed")
        context.logger.notice("release installed", metadata: ["release": "\(release)",
            "bytes": "\(verified.sqliteBytes)", "build_time": "\(verified.buildTime)",
            "verify_seconds": "\(verifySeconds)", "seconds": "\(ContinuousClock.now - started)"])
        var installing = Stol_V1_ImportProgress()
        installing.stage = .installing
        installing.fraction = 1
        installing.bytesDone = verified.sqliteBytes
        installing.bytesTotal = verified.sqliteBytes
        try? relay(installing)
        try? send(done(release: release))
    }

    /// Relays the verifier's progress and writes its chunks to `staged` until its
    /// final frame; checks size and SHA-256 against `done`, then fsyncs (in commit).
    private func receiveVerifiedDatabase(from verifier: FrameSocket, into staged: AtomicFile, context: RequestContext,
                                         relay: (Stol_V1_ImportProgress) throws -> Void) throws -> Stol_V1_VerifyDone {
        var hasher = SHA256()
        var bytes: UInt64 = 0
        var expected: UInt64 = 0
        // Chunks flow while the verifier still checks the database; INSTALLING
        // progress starts once that check is done, so stages only move forward.
        var checked = false
        var lastRelay = ContinuousClock.now
        let stall = configuration.verifierStallTimeout.components
        let stallMilliseconds = Int32(clamping: stall.seconds * 1000 + stall.attoseconds / 1_000_000_000_000_000)
        while true {
            if !verifier.hasBufferedFrame, let clientFD = context.connectionDescriptor {
                switch ConnectionWatch.wait(readable: verifier.descriptor, orClosed: clientFD,
                                            timeoutMilliseconds: stallMilliseconds) {
                case .readable: break
                case .peerClosed: throw ImportError.cancelled("the client closed the connection")
                case .timedOut: throw ImportError.verifierFailed("no answer for \(configuration.verifierStallTimeout)")
                }
            }
            let answer: Stol_V1_VerifyResponse
            do {
                answer = try verifier.receive(Stol_V1_VerifyResponse.self).message
            } catch {
                if case .closedByPeer = error {
                    throw ImportError.verifierFailed("it stopped before finishing (killed or crashed)")
                }
                throw ImportError.verifierFailed("\(error)")
            }
            switch answer.result {
            case .progress(let progress):
                if progress.stage == .checkingDatabase {
                    expected = progress.bytesTotal
                    checked = progress.fraction >= 1
                }
                try relay(progress)
            case .chunk(let chunk):
                bytes += UInt64(chunk.data.count)
                guard bytes <= ImportLimits.maximumDecompressedBytes else {
                    throw ImportError.verifierFailed("it sent more than \(ImportLimits.maximumDecompressedBytes) bytes")
                }
                do {
                    try chunk.data.withUnsafeBytes { raw in
                        hasher.update(raw)
                        try staged.append(raw)
                    }
                } catch {
                    throw ReferenceDatabaseStore.storageError(error)
                }
                if bytes == UInt64(chunk.data.count) { pausePoints.reached("import:receiving") }
                let now = ContinuousClock.now
                if checked && now - lastRelay >= .milliseconds(100) {
                    lastRelay = now
                    var progress = Stol_V1_ImportProgress()
                    progress.stage = .installing
                    progress.bytesDone = bytes
                    progress.bytesTotal = max(expected, bytes)
                    progress.fraction = Double(bytes) / Double(max(expected, bytes))
                    try relay(progress)
                }
            case .done(let done):
                guard done.sqliteBytes == bytes else {
                    throw ImportError.verifierFailed("it announced \(done.sqliteBytes) bytes and sent \(bytes)")
                }
                guard Array(done.sqliteSha256) == hasher.finalize() else {
                    throw ImportError.verifierFailed("the SHA-256 of the bytes it sent differs from the one it announced")
                }
                return done
            case .error(let error):
                throw ProtocolError(error)
            case nil:
                throw ImportError.verifierFailed("an answer without a result")
            }
        }
    }
}
