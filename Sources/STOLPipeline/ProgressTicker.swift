/// Calls a progress handler every `interval` rows and at the end of a file.
struct ProgressTicker {
    let file: String
    let handler: ReadProgressHandler?
    let started = ContinuousClock.now
    private(set) var rows = 0
    private var nextReport: Int
    private let interval: Int

    init(file: String, handler: ReadProgressHandler?, interval: Int = 500_000) {
        self.file = file
        self.handler = handler
        self.interval = interval
        self.nextReport = interval
    }

    mutating func tick() {
        rows += 1
        if rows == nextReport {
            nextReport += interval
            handler?(ReadProgress(file: file, rows: rows, elapsed: ContinuousClock.now - started, finished: false))
        }
    }

    func finish() {
        handler?(ReadProgress(file: file, rows: rows, elapsed: ContinuousClock.now - started, finished: true))
    }
}
