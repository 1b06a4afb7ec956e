import Foundation
import Glibc
import Logging
import STOLContainer
import STOLFormat
import STOLImportCore
import STOLModel
import STOLProtocol
import STOLTransport

/// `stol-verifyd`'s handler: the checklist of `protocol/PROTOCOL.md` §7 on the
/// untrusted file it is handed as a descriptor, then the verified database
/// streamed back.
///
/// It is the only code that parses untrusted bytes, and it runs in a fresh
/// process per import that has sandboxed itself (``VerifierSandbox``): it can
/// read the descriptors it was given (the file; for a delta, the installed base,
/// attached by the request before) and write two anonymous temporary files
/// (``ScratchFile``: the database, and a delta's private copy), nothing else. The
/// checks, in order:
///
/// 1. the caller is the import coordinator's user (or root);
/// 2. `StolFile.verify`, the same function `stol-pipeline verify` runs: readable,
///    size, magic, header, SHA-256, the key (trusted, not revoked or expired) and
///    its Ed25519 signature, schema version supported, the payload decompressed
///    (one gzip member, or a delta's zstd frame against the base) to at most 4 GiB,
///    the signed content's size and SHA-256 (format version 2) — into the scratch file;
/// 3. ``DatabaseChecks``: SQLite header, `schema_version` row equal to the header,
///    `PRAGMA integrity_check` (`quick_check` for the database a row delta's
///    application wrote here: ``DatabaseChecks/IntegrityDepth``), the tables, columns and indexes the server reads,
///    and (version 2) the provenance naming the header's release and id namespace;
/// 4. `chunk` frames (1 MiB each) of the verified database, then `done` with its
///    size, SHA-256 (computed while inflating) and build time. The coordinator
///    checks the chunks against the signed header itself, not against `done`.
///
/// Progress frames name the stage and carry bytes done and total, at most every
/// ``ProgressThrottle/interval`` within a stage. When the coordinator closes the
/// connection the work stops at the next progress point.
public final class VerifierService: StreamingFramedService, @unchecked Sendable {
    public typealias Request = Stol_V1_VerifyRequest
    public typealias Response = Stol_V1_VerifyResponse

    public struct Configuration: Sendable {
        /// The uid allowed to ask (the import coordinator's); root is always allowed.
        public var allowedUID: UInt32
        /// The trusted keys, or why there are none (answered to every request).
        public var trustedKeys: Result<TrustedKeys, ImportError>
        public var options: StolFile.VerifyOptions
        public var chunkBytes: Int
        /// The clock keys' `not-after` is compared with (tests move it).
        public var now: @Sendable () -> Int64

        public init(allowedUID: UInt32, trustedKeys: Result<TrustedKeys, ImportError>,
                    options: StolFile.VerifyOptions = .init(supportedSchemaVersions: TaxonomySchema.supportedVersions),
                    chunkBytes: Int = ImportLimits.chunkBytes, now: @escaping @Sendable () -> Int64 = TrustedKeys.currentTime) {
            self.allowedUID = allowedUID
            self.trustedKeys = trustedKeys
            self.options = options
            self.chunkBytes = chunkBytes
            self.now = now
        }
    }

    private let configuration: Configuration
    private let scratch: ScratchFile
    /// A delta's private copy (taken while it is hashed); nil: deltas are refused.
    private let deltaScratch: ScratchFile?
    /// The copy of the base a row delta's rows are applied to; nil: row deltas are refused.
    private let rowDeltaScratch: ScratchFile?
    private let pausePoints: TestPausePoints
    /// The base a delta applies to, attached by the request before it (one connection per process).
    private var attachedBase: OwnedFileDescriptor?

    public init(configuration: Configuration, scratch: ScratchFile, deltaScratch: ScratchFile? = nil,
                rowDeltaScratch: ScratchFile? = nil, pausePoints: TestPausePoints = .disarmed) {
        self.configuration = configuration
        self.scratch = scratch
        self.deltaScratch = deltaScratch
        self.rowDeltaScratch = rowDeltaScratch
        self.pausePoints = pausePoints
    }

    public func respond(to request: Request, context: RequestContext, send: (Response) throws -> Void) {
        let started = ContinuousClock.now
        do {
            guard let done = try verify(request, context: context, send: send) else { return }
            context.logger.info("verified", metadata: [
                "sqlite_bytes": "\(done.sqliteBytes)", "seconds": "\(ContinuousClock.now - started)",
                "peak_rss_kib": "\(Self.peakResidentKiB())"])
        } catch let error as ImportError {
            if case .cancelled = error {
                context.logger.notice("verification cancelled: the coordinator closed the connection")
            } else {
                context.logger.notice("verification refused", metadata: ["code": "\(error.protocolError.code.name)"])
                try? send(Response(requestID: request.id, error: error.protocolError))
            }
        } catch let error as ProtocolErrorConvertible {
            // A request without a body, or with one of a later revision: its typed error,
            // never silence with the connection left open.
            context.logger.notice("verification refused", metadata: ["code": "\(error.protocolError.code.name)"])
            try? send(Response(requestID: request.id, error: error.protocolError))
        } catch {
            context.logger.notice("verification cancelled: the coordinator closed the connection")
        }
        try? scratch.reset()
        try? deltaScratch?.reset()
        try? rowDeltaScratch?.reset()
    }

    private func verify(_ request: Request, context: RequestContext, send: (Response) throws -> Void) throws -> Stol_V1_VerifyDone? {
        guard context.peer.uid == 0 || context.peer.uid == configuration.allowedUID else {
            throw ImportError.permissionDenied("only the import coordinator may use the verifier")
        }
        switch request.body {
        case .attachBase:
            guard let descriptor = context.receivedFileDescriptor else { throw ImportError.missingFileDescriptor }
            // The server closes the request's descriptor when this request is answered: keep a copy.
            let copy = fcntl(descriptor.rawValue, F_DUPFD_CLOEXEC, 0)
            guard copy >= 0 else { throw ImportError.storage("cannot keep the delta's base: \(String(cString: strerror(errno)))") }
            attachedBase = OwnedFileDescriptor(copy)
            var response = Response()
            response.id = request.id
            response.baseAttached = Stol_V1_BaseAttached()
            try send(response)
            return nil
        case .verifyFile:
            break
        case nil:
            throw request.missingBodyError
        }
        guard let descriptor = context.receivedFileDescriptor else { throw ImportError.missingFileDescriptor }
        let keys = try configuration.trustedKeys.get()
        try scratch.reset()
        let base = attachedBase
        attachedBase = nil

        return try withoutActuallyEscaping(send) { send in
            try verify(fd: descriptor.rawValue, keys: keys, base: base, context: context, send: send)
        }
    }

    private func verify(fd: Int32, keys: TrustedKeys, base: OwnedFileDescriptor?, context: RequestContext,
                        send: @escaping (Response) throws -> Void) throws -> Stol_V1_VerifyDone {
        let reporter = ProgressReporter(send: send, context: context, pausePoints: pausePoints)
        var payloadBytes: UInt64 = 0
        var outputFailure: ImportError?
        var prefix: [UInt8] = []
        let verified: StolFile.Verified
        let delta = deltaScratch.map { copy in
            DeltaWorkspace(baseDescriptor: base?.rawValue, payloadDescriptor: copy.descriptor, outputDescriptor: scratch.descriptor,
                           workDescriptor: rowDeltaScratch?.descriptor)
        }
        do throws(StolFormatError) {
            verified = try StolFile.verify(
                fileDescriptor: fd, trust: keys, now: configuration.now(), options: configuration.options, delta: delta,
                events: { (event) throws(StolFormatError) in
                    switch event {
                    case .passed(.fileSize(let bytes)):
                        payloadBytes = bytes
                    case .progress(let stage, let fraction):
                        let total: UInt64 = stage == .checkingHeader ? UInt64(StolHeader.maximumSize) : payloadBytes
                        do { try reporter.report(Self.stage(stage), fraction, total: total) } catch {
                            throw .cancelled("the coordinator closed the connection")
                        }
                    case .passed: break
                    }
                },
                output: { (chunk) throws(StolFormatError) in
                    do throws(ImportError) {
                        if prefix.count < DatabaseChecks.sqliteMagic.count {
                            prefix += chunk.prefix(DatabaseChecks.sqliteMagic.count - prefix.count)
                            if prefix.count == DatabaseChecks.sqliteMagic.count { try DatabaseChecks.checkHeader(prefix) }
                        }
                        try scratch.append(chunk)
                    } catch {
                        outputFailure = error
                        throw .outputFailed("\(error)")
                    }
                })
        } catch {
            if let outputFailure { throw outputFailure }
            if case .cancelled(let reason) = error { throw ImportError.cancelled(reason) }
            throw ImportError.verification(error)
        }
        if verified.header.kind?.isDelta == true {
            // The result was written through a mapping of the scratch file.
            scratch.adopt(length: verified.sqliteBytes)
            prefix = [UInt8](repeating: 0, count: min(DatabaseChecks.sqliteMagic.count, Int(verified.sqliteBytes)))
            _ = try prefix.withUnsafeMutableBytes { raw throws(ImportError) in try scratch.read(into: raw, at: 0) }
        }
        try DatabaseChecks.checkHeader(prefix)
        try scratch.finish()

        // The database checks and the transfer overlap (two cores): the bytes are
        // authentic once decompression has re-hashed the payload, and the coordinator
        // keeps them in staging until `done`, discarding them on an error frame.
        // The checks run on a thread of their own; only this thread uses the socket.
        try reporter.report(.checkingDatabase, 0, total: verified.sqliteBytes)
        let checker = DatabaseCheckThread(descriptor: scratch.descriptor, headerSchemaVersion: verified.header.schemaVersion,
                                          depth: .init(kind: verified.header.kind))
        checker.start()
        defer { checker.cancel(); _ = checker.wait(timeout: nil) }
        func reportChecking() throws {
            try reporter.report(.checkingDatabase, min(checker.fraction, 0.99), total: verified.sqliteBytes)
        }
        do {
            pausePoints.reached("verify:sending")
            var buffer = [UInt8](repeating: 0, count: configuration.chunkBytes)
            var offset: UInt64 = 0
            while offset < verified.sqliteBytes, !checker.hasFailed {
                let want = Int(min(UInt64(buffer.count), verified.sqliteBytes - offset))
                let got = try buffer.withUnsafeMutableBytes { raw throws(ImportError) in
                    try scratch.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<want]), at: offset)
                }
                guard got > 0 else { throw ImportError.storage("the temporary file ended early at \(offset) bytes") }
                var chunk = Stol_V1_VerifiedChunk()
                chunk.data = Data(buffer[0..<got])
                var response = Response()
                response.chunk = chunk
                try send(response)
                offset += UInt64(got)
                try reportChecking()
            }
            while !checker.wait(timeout: ProgressReporter.interval) { try reportChecking() }
        } catch let error as ImportError {
            throw error
        } catch {
            throw ImportError.cancelled("the coordinator closed the connection")
        }
        let facts = try checker.result()
        try Self.checkLabels(verified.header, facts: facts)
        try reporter.report(.checkingDatabase, 1, total: verified.sqliteBytes)
        var done = Stol_V1_VerifyDone()
        done.schemaVersion = facts.schemaVersion
        done.sqliteBytes = verified.sqliteBytes
        done.sqliteSha256 = Data(verified.sqliteSHA256)
        done.buildTime = facts.buildTime
        if let provenance = facts.provenance { done.provenance = Stol_V1_Provenance(provenance) }
        done.keyID = verified.keyID.description
        var response = Response()
        response.done = done
        try send(response)
        return done
    }

    /// A version 2 header names the release and id namespace of its database: they must
    /// be the database's own (only a faulty signer writes a header that disagrees).
    static func checkLabels(_ header: StolHeader, facts: DatabaseFacts) throws(ImportError) {
        guard header.formatVersion == 2 else { return }
        let release = facts.release
        let namespace = facts.provenance?.idNamespace ?? ReleaseName.unknown
        guard release == header.release, namespace == header.idNamespace else {
            throw .databaseCorrupt(check: .provenance, detail:
                "the header names release \(header.release) (ids \(header.idNamespace)), the database \(release) (ids \(namespace))")
        }
    }

    static func stage(_ stage: StolFile.Stage) -> Stol_V1_ImportStage {
        switch stage {
        case .checkingHeader: .checkingHeader
        case .verifyingChecksum: .verifyingChecksum
        case .verifyingSignature: .verifyingSignature
        case .decompressing: .decompressing
        }
    }

    /// This process's peak resident memory (`getrusage`), for the log and `make bench`.
    static func peakResidentKiB() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss
    }
}
