import STOLImportCore
import STOLProtocol
import STOLTransport

/// Progress frames for one verification: the first and last of every stage, and
/// in between at most one per ``interval``; arms the test pause points at the
/// start of each stage; tells whether the coordinator is still there.
final class ProgressReporter {
    static let interval: Duration = .milliseconds(100)

    private let send: (Stol_V1_VerifyResponse) throws -> Void
    private let context: RequestContext
    private let pausePoints: TestPausePoints
    private var stage: Stol_V1_ImportStage = .unspecified
    private var lastSent = ContinuousClock.now
    private var lastWatched = ContinuousClock.now
    private var closed = false

    init(send: @escaping (Stol_V1_VerifyResponse) throws -> Void, context: RequestContext, pausePoints: TestPausePoints) {
        self.send = send
        self.context = context
        self.pausePoints = pausePoints
    }

    func report(_ stage: Stol_V1_ImportStage, _ fraction: Double, total: UInt64) throws {
        let now = ContinuousClock.now
        let newStage = stage != self.stage
        if !newStage && fraction < 1 && now - lastSent < Self.interval { return }
        self.stage = stage
        lastSent = now
        var progress = Stol_V1_ImportProgress()
        progress.stage = stage
        progress.fraction = fraction
        progress.bytesTotal = total
        progress.bytesDone = UInt64((Double(total) * fraction).rounded())
        var response = Stol_V1_VerifyResponse()
        response.progress = progress
        try send(response)
        // After the stage's first frame: a paused verifier shows its stage in `db status`.
        if newStage { pausePoints.reached("verify:" + Self.name(stage)) }
    }

    /// Polled by long work: whether the coordinator has closed the connection
    /// (asked of the kernel at most every 50 ms).
    var peerHasClosed: Bool {
        let now = ContinuousClock.now
        if !closed && now - lastWatched >= .milliseconds(50) {
            lastWatched = now
            closed = context.peerHasClosed
        }
        return closed
    }

    static func name(_ stage: Stol_V1_ImportStage) -> String {
        switch stage {
        case .received: "received"
        case .checkingHeader: "checking-header"
        case .verifyingChecksum: "verifying-checksum"
        case .verifyingSignature: "verifying-signature"
        case .decompressing: "decompressing"
        case .checkingDatabase: "checking-database"
        case .installing: "installing"
        default: "unspecified"
        }
    }
}
