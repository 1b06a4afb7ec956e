import STOLFileSystem
import STOLModel
import STOLProtocol
import STOLTransport

/// What serves and how it stands: from memory.
struct StatusHandler: TaxonomyRequestHandler {
    static let operation = "status"
    /// A status is what a script polls until `tree_loaded`: counted as activity, a poll
    /// every 0.2 s (under the names' build's 250 ms quiet) held that build back to its
    /// 30 s limit, and the tree "loaded" after 32 s instead of 2. A batch's own status
    /// is followed by its requests, which count.
    static var holdsBackIdleWork: Bool { false }

    static func answer(_ body: Stol_V1_StatusRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        let selection = context.selection, database = selection.database, provider = context.service.provider
        var status = Stol_V1_StatusResponse()
        status.active = database.identity
        status.activePath = database.path
        status.taxaCount = UInt64(database.taxaCount)
        status.sizeBytes = database.sizeBytes
        status.referencePresent = selection.referencePresent
        status.referenceRequested = selection.referenceRequested
        status.fallbackReason = selection.fallbackReason ?? ""
        status.serverVersion = TaxonomyService.version
        status.speciesCount = UInt64(database.speciesCount)
        status.namesCount = UInt64(database.namesCount)
        status.bundledPath = provider.bundledPath
        status.bundledSizeBytes = FileStat(path: provider.bundledPath)?.size ?? 0
        status.referencePath = provider.referencePath
        status.referenceSizeBytes = FileStat(path: provider.referencePath)?.size ?? 0
        status.precomputedRelatives = UInt32(database.precomputedRelatives)
        status.treeLoaded = database.memoryIndexes.map { $0.tree != nil && $0.namesLoaded } ?? false
        status.fullTreeNodes = UInt64(database.fullTreeCount)
        status.fullTreeLoaded = database.memoryIndexes?.wholeTree != nil
        if let provenance = database.provenance { status.provenance = Stol_V1_Provenance(provenance) }
        let current = provider.currentWithoutWaiting().database
        status.defaultRelease = current.release
        var bundled = Stol_V1_ReleaseInfo()
        bundled.release = ReleaseName.bundled
        bundled.kind = .bundled
        if let stat = FileStat(path: provider.bundledPath) {
            bundled.sizeBytes = stat.size
            bundled.fingerprint = stat.fingerprint
        }
        bundled.isDefault = current.kind == .bundled
        bundled.loaded = true
        if let served = provider.bundledDatabase.provenance { bundled.provenance = Stol_V1_Provenance(served) }
        bundled.buildTime = provider.bundledDatabase.buildTime
        bundled.schemaVersion = UInt32(provider.bundledDatabase.schemaVersion)
        status.releases = [bundled] + provider.pinned.describeInstalled().map { release in
            var release = release
            if current.kind == .reference && release.release == current.release {
                release.isDefault = true
                release.loaded = true
            }
            return release
        }
        return .status(status)
    }
}

/// The plain-text report for bug reports (never query text, user ids or another
/// user's counts); bulk work.
struct DiagnosticsHandler: TaxonomyRequestHandler {
    static let operation = "diagnostics"
    static func cost(_ body: Stol_V1_DiagnosticsRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_DiagnosticsRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        var diagnostics = Stol_V1_DiagnosticsResponse()
        diagnostics.report = DiagnosticsReport(selection: context.selection, statistics: context.service.statistics,
                                               uid: context.uid, serverVersion: TaxonomyService.version).text
        return .diagnostics(diagnostics)
    }
}
