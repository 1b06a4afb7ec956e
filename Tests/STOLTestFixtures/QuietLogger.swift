import Logging
import STOLTestFixtures

/// A logger that drops everything, for the code under test: test output stays
/// readable, and no test depends on what is logged (LoggingPrivacyTests read the
/// real daemons' logs instead).
public let quietLogger = Logger(label: "stol.tests", factory: { _ in SwiftLogNoOpLogHandler() })
