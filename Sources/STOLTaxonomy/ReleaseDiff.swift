import Foundation
import GRDB
import STOLModel
import STOLProtocol

/// What changed between two releases, and one id through several: read from the
/// releases' files, never from the in-memory indexes, so that comparing two full
/// NCBI releases costs two short-lived read connections and one page of rows each,
/// not two loaded releases.
///
/// A diff is a merge of the two `taxa` tables walked in id order (their primary
/// key), one page at a time: each page reads at most `limit` rows of each release
/// after `after_id` and compares the ids both pages cover. The comparison is the
/// source's own node: its scientific name, its parent and its rank as the source
/// spells it. An id only the old release has is `merged` when the new release
/// records the merge (NCBI `merged.dmp`, table `merged_ids`), else `deleted`.
enum ReleaseDiff {
    /// Ids of each release per page, at most.
    static let maximumPage = 100_000
    /// Ids a `taxon_ids` request may name.
    static let maximumIDs = 1000
    /// A page ends after the id whose changes take its answer past this many bytes
    /// (about; the answer frame's limit is 4 MiB). 100,000 new ids in a row, as between
    /// NCBI 2021.11.16 and 2023.11.4, made a page of 4.6 MB: the ids per page alone do
    /// not bound it.
    static let pageBytes = 2 << 20

    /// One node as a release has it.
    struct Node: Equatable {
        var id: Int64
        var parent: Int64?
        var rank: String
        var name: String
    }

    /// A release's file, opened read-only for one request.
    struct Release {
        let name: String
        let queue: DatabaseQueue
        /// Its schema version (retired ids are recorded from schema 2 on) and build time.
        let facts: DatabaseFacts

        init(name: String, path: String) throws(TaxonomyError) {
            self.name = name
            var configuration = Configuration()
            configuration.readonly = true
            configuration.label = "diff"
            do {
                queue = try DatabaseQueue(path: path, configuration: configuration)
                facts = try queue.inDatabase { db in try DatabaseFacts.read(db) }
            } catch {
                throw .databaseUnusable(path: path, reason: "\(error)")
            }
        }

        /// What the release records of an id it lacks (merged, deleted), if it records that.
        func retired(_ db: Database, _ id: Int64) throws -> RetiredID? {
            try RetiredID.lookup(db, id, schemaVersion: Int(facts.schemaVersion))
        }

        func read<T>(_ body: (Database) throws -> T) throws(TaxonomyError) -> T {
            do {
                return try queue.inDatabase(body)
            } catch {
                throw .query("\(error)")
            }
        }
    }

    private static let columns = "id, parent_id, rank, scientific_name"

    private static func node(_ row: Row) -> Node {
        Node(id: row[0], parent: row[1], rank: row[2], name: row[3])
    }

    /// The next page of changes from `old` to `new` after `afterID`.
    static func page(from old: Release, to new: Release, afterID: Int64, limit: Int) throws(TaxonomyError) -> Stol_V1_DiffResponse {
        let limit = max(1, min(limit, maximumPage))
        let sql = "SELECT \(columns) FROM taxa WHERE id > ? ORDER BY id LIMIT ?"
        let before = try old.read { try Row.fetchAll($0, sql: sql, arguments: [afterID, limit]).map(node) }
        let after = try new.read { try Row.fetchAll($0, sql: sql, arguments: [afterID, limit]).map(node) }
        // Both pages cover the ids up to the smaller of their last ids (a page shorter
        // than the limit covers every id left in its release).
        let oldEnd = before.count < limit ? Int64.max : before.last!.id
        let newEnd = after.count < limit ? Int64.max : after.last!.id
        let end = min(oldEnd, newEnd)
        var response = Stol_V1_DiffResponse()
        var i = 0, j = 0
        var bytes = 0
        /// The id the page was cut after, when its answer grew past ``pageBytes``.
        var cut: Int64?
        try new.read { db in
            while true {
                let a = i < before.count && before[i].id <= end ? before[i] : nil
                let b = j < after.count && after[j].id <= end ? after[j] : nil
                if a == nil && b == nil { break }
                if (i + j) % 256 == 0 { try TaxonomyError.checkCancellation() }
                // Cut on an id boundary: every change of one id is on the same page.
                if bytes > pageBytes {
                    cut = min(a?.id ?? .max, b?.id ?? .max) - 1
                    break
                }
                let counted = response.changes.count
                if let a, let b, a.id == b.id {
                    response.changes += changes(from: a, to: b)
                    i += 1; j += 1
                } else if let a, b == nil || a.id < b!.id {
                    response.changes.append(try departure(of: a, in: new, db))
                    i += 1
                } else if let b {
                    response.changes.append(added(b))
                    j += 1
                }
                for change in response.changes[counted...] {
                    bytes += 24 + change.name.utf8.count + change.rank.utf8.count + change.oldValue.utf8.count
                        + change.newValue.utf8.count + change.newName.utf8.count
                }
            }
        }
        if let cut {
            response.nextAfterID = cut
        } else {
            response.done = end == Int64.max
            response.nextAfterID = response.done ? 0 : end
        }
        return response
    }

    /// The changes of the ids `ids` only (a user's favourites), in the order given.
    static func changes(of ids: [Int64], from old: Release, to new: Release) throws(TaxonomyError) -> Stol_V1_DiffResponse {
        let sql = "SELECT \(columns) FROM taxa WHERE id = ?"
        var response = Stol_V1_DiffResponse()
        var seen = Set<Int64>()
        for id in ids where seen.insert(id).inserted {
            let a = try old.read { try Row.fetchOne($0, sql: sql, arguments: [id]).map(node) }
            let b = try new.read { try Row.fetchOne($0, sql: sql, arguments: [id]).map(node) }
            switch (a, b) {
            case (let a?, let b?): response.changes += changes(from: a, to: b)
            case (let a?, nil): response.changes.append(try new.read { try departure(of: a, in: new, $0) })
            case (nil, let b?): response.changes.append(added(b))
            case (nil, nil): break
            }
        }
        response.done = true
        return response
    }

    /// Renamed, moved, rank changed: one change each, in that order.
    static func changes(from a: Node, to b: Node) -> [Stol_V1_TaxonChange] {
        var changes: [Stol_V1_TaxonChange] = []
        func change(_ kind: Stol_V1_ChangeKind, _ old: String, _ new: String) {
            changes.append(.with {
                $0.kind = kind; $0.id = b.id; $0.name = b.name; $0.rank = b.rank; $0.oldValue = old; $0.newValue = new
            })
        }
        if a.name != b.name { change(.renamed, a.name, b.name) }
        if a.parent != b.parent { change(.moved, a.parent.map(String.init) ?? "", b.parent.map(String.init) ?? "") }
        if a.rank != b.rank { change(.rankChanged, a.rank, b.rank) }
        return changes
    }

    /// An id only the new release has, with its parent.
    static func added(_ b: Node) -> Stol_V1_TaxonChange {
        .with { $0.kind = .added; $0.id = b.id; $0.name = b.name; $0.rank = b.rank; $0.newValue = b.parent.map(String.init) ?? "" }
    }

    /// Merged (with the taxon it went to) or deleted, for an id the new release lacks.
    static func departure(of node: Node, in new: Release, _ db: Database) throws -> Stol_V1_TaxonChange {
        var change = Stol_V1_TaxonChange()
        change.id = node.id
        change.name = node.name
        change.rank = node.rank
        change.kind = .deleted
        if case .merged(let target)? = try new.retired(db, node.id) {
            change.kind = .merged
            change.newID = target
            change.newName = try String.fetchOne(db, sql: "SELECT scientific_name FROM taxa WHERE id = ?", arguments: [target]) ?? ""
        }
        return change
    }

    /// `id` in one release: present with its name, rank and parent, or what the
    /// release says of its absence.
    static func state(of id: Int64, in release: Release) throws(TaxonomyError) -> Stol_V1_TaxonInRelease {
        try release.read { db in
            var state = Stol_V1_TaxonInRelease()
            state.release = release.name
            state.buildTime = release.facts.buildTime
            if let node = try Row.fetchOne(db, sql: "SELECT \(columns) FROM taxa WHERE id = ?", arguments: [id]).map(node) {
                state.present = true
                state.name = node.name
                state.rank = node.rank
                state.parentID = node.parent ?? 0
            } else {
                switch try release.retired(db, id) {
                case .merged(let target)?: state.mergedInto = target
                case .deleted?: state.deleted = true
                case nil: break
                }
            }
            return state
        }
    }
}
