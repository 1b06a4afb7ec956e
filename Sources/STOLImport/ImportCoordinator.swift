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
/// relays its progress. It parses only the file's header (at most 288 bytes at fixed
/// offsets), hashes the payload after it without interpreting a byte, and checks the
/// checksum, key and signature itself, in the format's order. The verified database comes
/// back as `chunk` frames, which it writes to `databases/.staging/stol_import_<uuid>.sqlite`
/// and hashes; only when the size and SHA-256 match the content the header signs
/// (never the verifier's own announcement) and the file is not an older build of an
/// installed release — its build time read by this process from those signed bytes, not
/// from the verifier's `done` — and its ids are the installed releases' namespace does it
/// fsync and rename it to `releases/<release>.sqlite`. Every install decision is taken
/// from signed facts. Format version 1 signs no content, so what it installs would be the
/// verifier's word: it is refused unless the operator allows it (`allowsFormatVersion1`,
/// `STOL_ALLOW_FORMAT_1`), the weaker guarantee the documentation names.
/// Anything else — a verifier that fails or dies, a client that leaves, a full
/// disk, this process killed — leaves every installed release and the activation
/// state as they were (the staging file is removed now, or at the next start).
public final class ImportCoordinator: StreamingFramedService {
    public typealias Request = Stol_V1_ImportRequest
    public typealias Response = Stol_V1_ImportResponse

    public struct Configuration: Sendable {
        /// Members may manage reference databases; nil means root only.
        public var adminGroupID: UInt32?
        /// One more user who may, besides root and the group: a private stack's owner
        /// (`stol-client serve` runs every daemon as that user, and no admin group applies).
        public var adminUserID: UInt32?
        /// A verifier that sends nothing for this long is given up on.
        public var verifierStallTimeout: Duration
        /// The trusted keys, read at each import (so a rotation needs no restart).
        public var trustedKeys: @Sendable () -> Result<TrustedKeys, ImportError>
        /// The clock keys' `not-after` is compared with (tests move it).
        public var now: @Sendable () -> Int64
        /// Whether a correctly signed format version 1 file may be installed. Version 1
        /// signs no content: what it installs is whatever the verifier produced, so a
        /// compromised verifier could install a database of its choosing. Off unless the
        /// operator turns it on (`STOL_ALLOW_FORMAT_1=yes`).
        public var allowsFormatVersion1: Bool

        public init(adminGroupID: UInt32?, adminUserID: UInt32? = nil, verifierStallTimeout: Duration = .seconds(120),
                    trustedKeys: @escaping @Sendable () -> Result<TrustedKeys, ImportError> = { TrustedKey.load() },
                    now: @escaping @Sendable () -> Int64 = TrustedKeys.currentTime,
                    allowsFormatVersion1: Bool = false) {
            self.adminGroupID = adminGroupID
            self.adminUserID = adminUserID
            self.verifierStallTimeout = verifierStallTimeout
            self.trustedKeys = trustedKeys
            self.now = now
            self.allowsFormatVersion1 = allowsFormatVersion1
        }
    }

    /// `STOL_ALLOW_FORMAT_1`'s value: `yes`, `true` or `1` allow version 1; anything else,
    /// or nothing, does not (a misspelt value keeps the stronger guarantee).
    public static func allowsFormatVersion1(_ value: String?) -> Bool {
        guard let value else { return false }
        return ["yes", "true", "1"].contains(value.lowercased())
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

    /// Refused requests, summed up by the server every window and at stop.
    public var notices: [RateLimitedLog] { [refusals] }

    public func respond(to request: Request, context: RequestContext, send: (Response) throws -> Void) {
        do {
            guard context.peer.isRootOrMember(ofGroup: configuration.adminGroupID)
                    || configuration.adminUserID == context.peer.uid else {
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
        status.trustProblems = Self.trustProblems(configuration.trustedKeys())
        status.formatVersion1Allowed = configuration.allowsFormatVersion1
        return status
    }

    /// What `status` and the log say of the trusted keys: why none is trusted, or the
    /// files that were not read and the keys held twice.
    static func trustProblems(_ keys: Result<TrustedKeys, ImportError>) -> [String] {
        switch keys {
        case .success(let keys): keys.problems
        case .failure(let error): [error.protocolError.message]
        }
    }

    /// The final answer. `endsImport`: the import this connection ran is over, so the
    /// state it describes has no import running (the slot is released just after).
    private func done(release: String = "", alreadyInstalled: Bool = false, header: StolHeader? = nil,
                      endsImport: Bool = false) -> Response {
        var done = Stol_V1_ImportDone()
        done.status = status()
        if endsImport {
            done.status.importRunning = false
            done.status.importStage = .unspecified
            done.status.importFraction = 0
        }
        done.release = release
        done.alreadyInstalled = alreadyInstalled
        if let header {
            done.formatVersion = UInt32(header.formatVersion)
            done.keyID = header.keyID?.description ?? ""
        }
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

        // The header, checked here and not only by the verifier: its key, its signature
        // and, for version 2, the content it signs, which is what the staged bytes must be.
        let header = try authenticatedHeader(descriptor.rawValue, logger: context.logger)
        if header.formatVersion == 1, !configuration.allowsFormatVersion1 { throw ImportError.formatVersion1NotAllowed }
        var base: OwnedFileDescriptor?
        if header.formatVersion == 2 {
            if !body.allowIDNamespaceChange, header.idNamespace != ReleaseName.unknown,
               let installed = store.installedNamespaces().subtracting([header.idNamespace]).sorted().first {
                throw ImportError.idNamespaceMismatch(installed: installed, offered: header.idNamespace)
            }
            if header.kind?.isDelta == true { base = try deltaBase(header) }
        }

        let verifier: FrameSocket
        do {
            verifier = try FrameSocket.connect(path: paths.verifySocket,
                                               maximumIncomingFrameBytes: ProtocolLimits.maximumResponseFrameBytes,
                                               maximumOutgoingFrameBytes: ProtocolLimits.maximumRequestFrameBytes)
        } catch {
            throw ImportError.verifierUnavailable("\(error)")
        }
        defer { verifier.close() }
        if let base { try attach(base, to: verifier) }
        var request = Stol_V1_VerifyRequest()
        request.id = 1
        var verifyBody = Stol_V1_VerifyFileRequest()
        verifyBody.sizeBytes = size
        request.verifyFile = verifyBody
        do {
            try verifier.send(request, passing: descriptor.rawValue)
        } catch {
            throw Self.verifierError(error)
        }
        descriptor.close()  // the verifier has its own copy; this process read only its header

        let staged: AtomicFile
        do {
            // The final name comes from the signed header (version 2) or the verified database.
            staged = try AtomicFile(path: paths.releasesDirectory,
                                    stagingPath: paths.stagingDirectory + "/stol_import_\(UUID().uuidString.lowercased()).sqlite")
        } catch {
            throw ReferenceDatabaseStore.storageError(error)
        }
        defer { staged.discard() }
        let verified = try receiveVerifiedDatabase(from: verifier, into: staged, header: header, context: context, relay: relay)
        let verifySeconds = ContinuousClock.now - started
        // The build time a downgrade is judged by: version 2, read here from the staged
        // bytes, which are the signed content to the byte; version 1 (allowed by the
        // operator), the verifier's word.
        let buildTime = header.formatVersion == 2 ? try signedBuildTime(of: staged, reported: verified.buildTime)
                                                  : verified.buildTime

        let release: String
        if header.formatVersion == 2 {
            release = header.release
        } else {
            release = verified.hasProvenance ? verified.provenance.release : ReleaseName.unknown
        }
        // Imported twice (a file, or a delta applied twice): the staged bytes are the
        // installed release's to the byte, so nothing is replaced and nothing changes.
        if header.formatVersion == 2, try isInstalled(release: release, sha256: header.contentSHA256) {
            context.logger.notice("release already installed with this content; nothing changed", metadata: ["release": "\(release)"])
            // Removed before the answer, not after (the defer): once told "nothing changed",
            // a client may look at the state directory at once, and it must find it as it was.
            staged.discard()
            try? send(done(release: release, alreadyInstalled: true, header: header, endsImport: true))
            return
        }
        // Another release is never a downgrade: only an older build of the same one.
        if !body.allowDowngrade, let installed = store.reference(release)?.buildTime, !installed.isEmpty,
           !buildTime.isEmpty, buildTime < installed {
            throw ImportError.downgradeRefused(installed: installed, offered: buildTime)
        }
        // Ids of another namespace would silently name other taxa for every user
        // (version 2 was checked against its signed header before the verifier ran).
        if header.formatVersion == 1, !body.allowIDNamespaceChange, verified.hasProvenance {
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
        try store.install(staged, release: release, sha256: Array(verified.sqliteSha256))
        pausePoints.reached("import:installed")
        context.logger.notice("release installed", metadata: ["release": "\(release)",
            "bytes": "\(verified.sqliteBytes)", "build_time": "\(buildTime)",
            "format_version": "\(header.formatVersion)", "key_id": "\(header.keyID?.description ?? verified.keyID)",
            "delta": "\(header.kind?.isDelta == true)",
            "verify_seconds": "\(verifySeconds)", "seconds": "\(ContinuousClock.now - started)"])
        var installing = Stol_V1_ImportProgress()
        installing.stage = .installing
        installing.fraction = 1
        installing.bytesDone = verified.sqliteBytes
        installing.bytesTotal = verified.sqliteBytes
        try? relay(installing)
        // Free before the answer goes: a client told "done" that imports again at once
        // was told BUSY while this thread had not yet left (a fresh-clone CI run).
        activity.withLock { $0 = nil }
        try? send(done(release: release, header: header, endsImport: true))
        TaxonomyWarmUp(socketPath: paths.taxonomySocket).start(release: release, logger: context.logger)
    }

    /// Reads the file's header (at most 288 bytes at fixed offsets: the only bytes of an
    /// untrusted file this process parses), hashes the payload after it (bytes it never
    /// interprets), then checks key, signature and form: the checks of
    /// `protocol/STOL-FORMAT.md` §6 in their order, so that a damaged payload digest is
    /// `CHECKSUM_MISMATCH` here as in `stol-pipeline verify`, never `SIGNATURE_INVALID`.
    private func authenticatedHeader(_ fd: Int32, logger: Logger) throws -> StolHeader {
        let loaded = configuration.trustedKeys()
        for problem in Self.trustProblems(loaded) { logger.warning("trusted keys: \(problem)") }
        let keys = try loaded.get()
        do throws(StolFormatError) {
            let header = try StolHeader.read(fromDescriptor: fd)
            guard try SHA256.hash(fileDescriptor: fd, from: UInt64(header.size)).digest == header.payloadSHA256 else {
                throw .checksumMismatch
            }
            try header.authenticate(with: keys, now: configuration.now())
            return header
        } catch {
            throw ImportError.verification(error)
        }
    }

    /// The build time of a version 2 file's database, read from the staged bytes (which
    /// ``receiveVerifiedDatabase`` checked are the signed content) through the same reader
    /// as an installed release's. A verifier whose `done` reports another build time
    /// contradicts the signed content and is not believed on anything.
    private func signedBuildTime(of staged: AtomicFile, reported: String) throws -> String {
        let facts: DatabaseFacts
        do throws(ImportError) {
            facts = try ReferenceDatabaseStore.read(path: staged.temporaryPath)
        } catch {
            throw ImportError.verifierFailed("the signed content cannot be read as a database: \(error.protocolError.message)")
        }
        guard facts.buildTime == reported else {
            throw ImportError.verifierFailed("it reports build time \(reported.prefix(64)), the signed content \(facts.buildTime)")
        }
        return facts.buildTime
    }

    /// True when `release` is installed with exactly the content `sha256` (an import
    /// applied twice changes nothing). The installed file's digest is the one recorded
    /// at install when the record is still this file's, so nothing is read again.
    private func isInstalled(release: String, sha256: [UInt8]) throws -> Bool {
        try installed(release)?.digest == sha256
    }

    /// Installed `release` opened read-only with its SHA-256, checked through that
    /// descriptor (a release replaced meanwhile cannot slip another file past the check):
    /// the digest recorded at install when the record is this file's, else hashed here.
    /// Nil when no such release is installed.
    private func installed(_ release: String) throws -> (file: OwnedFileDescriptor, digest: [UInt8])? {
        guard ReleaseName.isValid(release) else { return nil }
        let fd = open(paths.releaseDatabase(release), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw ImportError.storage("cannot open the installed release \(release): \(String(cString: strerror(errno)))")
        }
        let file = OwnedFileDescriptor(fd)
        do {
            return (file, try store.digest(of: release, descriptor: fd))
        } catch {
            throw ImportError.storage("cannot read the installed release \(release): \(error)")
        }
    }

    /// The installed base a delta names, opened read-only, after checking its SHA-256
    /// (the verifier hashes the base itself too, its check 11: with the record made at
    /// install, the base is read once per import, not twice).
    private func deltaBase(_ header: StolHeader) throws -> OwnedFileDescriptor {
        let release = header.baseRelease
        guard let (base, digest) = try installed(release) else {
            throw ImportError.deltaBaseMismatch(baseRelease: release, installedSHA256: nil)
        }
        guard digest == header.baseSHA256 else {
            throw ImportError.deltaBaseMismatch(baseRelease: release, installedSHA256: digest.hexString)
        }
        return base
    }

    /// Hands the verifier a delta's base (read-only) before the delta itself.
    private func attach(_ base: OwnedFileDescriptor, to verifier: FrameSocket) throws {
        var info = stat()
        _ = fstat(base.rawValue, &info)
        var request = Stol_V1_VerifyRequest()
        request.id = 1
        var body = Stol_V1_AttachBase()
        body.sizeBytes = UInt64(info.st_size)
        request.attachBase = body
        do {
            try verifier.send(request, passing: base.rawValue)
            let answer = try verifier.receive(Stol_V1_VerifyResponse.self).message
            switch answer.result {
            case .baseAttached: break
            case .error(let error): throw ProtocolError(error)
            default: throw ImportError.verifierFailed("it did not take the delta's base")
            }
        } catch let error as TransportError {
            throw Self.verifierError(error)
        }
        base.close()
    }

    /// A verifier whose connection was lost after it took it: killed or crashed mid-import.
    private static let verifierStopped = ImportError.verifierFailed("it stopped before finishing (killed or crashed)")

    /// What a failed exchange with a verifier that accepted the connection means: one
    /// lost under the exchange (killed or crashed, a broken pipe) stopped mid-import, like
    /// one lost while it sends chunks; only what never reached it is "not reachable" (a
    /// kill at that moment answered UNAVAILABLE, exit 5, instead of the import's failure).
    private static func verifierError(_ error: any Error) -> ImportError {
        if let lost = error as? TransportError, lost.isConnectionLost {
            return verifierStopped
        }
        return .verifierUnavailable("\(error)")
    }

    /// Relays the verifier's progress and writes its chunks to `staged` until its
    /// final frame; checks size and SHA-256 against `done`, then fsyncs (in commit).
    private func receiveVerifiedDatabase(from verifier: FrameSocket, into staged: AtomicFile, header: StolHeader,
                                         context: RequestContext,
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
                    throw Self.verifierStopped
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
                // The protocol's chunk size (PROTOCOL.md §7): a larger one is a verifier that
                // does not follow it, whatever the frame limit would let through.
                guard chunk.data.count <= ImportLimits.chunkBytes else {
                    throw ImportError.verifierFailed("it sent a chunk of \(chunk.data.count) bytes, over the \(ImportLimits.chunkBytes)-byte limit")
                }
                bytes += UInt64(chunk.data.count)
                if header.formatVersion == 2, bytes > header.contentSize {
                    throw ImportError.contentMismatch("the verifier sent more than the \(header.contentSize) bytes the header signs")
                }
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
                let digest = hasher.finalize()
                if header.formatVersion == 2 {
                    // The signed content decides, never the verifier's announcement.
                    guard bytes == header.contentSize, digest == header.contentSHA256 else {
                        throw ImportError.contentMismatch(
                            "\(bytes) bytes with SHA-256 \(digest.hexString.prefix(16))…; the header signs \(header.contentSize) bytes with \(header.contentSHA256.hexString.prefix(16))…")
                    }
                }
                guard done.sqliteBytes == bytes else {
                    throw ImportError.verifierFailed("it announced \(done.sqliteBytes) bytes and sent \(bytes)")
                }
                guard Array(done.sqliteSha256) == digest else {
                    throw ImportError.verifierFailed("the SHA-256 of the bytes it sent differs from the one it announced")
                }
                // What it reports about the database must agree with what the header signs:
                // a verifier that contradicts the signed header is not believed on anything.
                guard done.schemaVersion == header.schemaVersion else {
                    throw ImportError.verifierFailed("it reports schema version \(done.schemaVersion), the signed header \(header.schemaVersion)")
                }
                if header.formatVersion == 2 {
                    let release = done.hasProvenance ? done.provenance.release : ReleaseName.unknown
                    let namespace = done.hasProvenance ? done.provenance.idNamespace : ReleaseName.unknown
                    guard release == header.release, namespace == header.idNamespace else {
                        throw ImportError.verifierFailed("it reports release \(release.prefix(64)) (ids \(namespace.prefix(64))), "
                            + "the signed header \(header.release) (ids \(header.idNamespace))")
                    }
                }
                return done
            case .error(let error):
                throw ProtocolError(error)
            case .baseAttached:
                throw ImportError.verifierFailed("an answer out of order (base_attached)")
            case nil:
                throw ImportError.verifierFailed("an answer without a result")
            }
        }
    }
}
