import Foundation
import STOLFormat

/// Loading the trusted keys for the verifier and the coordinator
/// (`protocol/STOL-FORMAT.md` §7: `/usr/share/stol/keys/`, `/etc/stol/keys/`, or
/// `STOL_TRUSTED_KEY`; a `revoked` list wins). Never from the `.stol` file, and
/// never from anything a caller sends.
public enum TrustedKey {
    public static let environmentVariable = TrustedKeys.environmentVariable

    /// The keys, or why there are none (then every verification is refused).
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment) -> Result<TrustedKeys, ImportError> {
        let locations = TrustedKeys.locations(environment: environment)
        let keys = TrustedKeys.load(locations: locations)
        guard keys.revocationProblems.isEmpty else {
            return .failure(.noTrustedKey("the revocation list cannot be read whole, so no key is trusted until it is fixed: "
                + keys.revocationProblems.joined(separator: "; ")))
        }
        guard !keys.entries.isEmpty else {
            let problems = keys.problems.isEmpty ? "" : " (\(keys.problems.joined(separator: "; ")))"
            return .failure(.noTrustedKey("no public key in \(locations.joined(separator: ", "))\(problems); "
                + "install one with make install RELEASE_KEY=FILE, or set \(environmentVariable)"))
        }
        return .success(keys)
    }

    /// One line naming each key, for the log: `id (file, not after …)`, then the revoked ids.
    public static func describe(_ keys: TrustedKeys) -> String {
        var parts = keys.entries.values.sorted { $0.id < $1.id }.map { entry in
            var text = "\(entry.id)"
            if keys.revoked.contains(entry.id) { text += " revoked" }
            if let notAfter = entry.notAfter { text += " not after \(PublicKeyFile.formatDate(notAfter))" }
            return text
        }
        let revokedOnly = keys.revoked.subtracting(keys.entries.keys)
        if !revokedOnly.isEmpty { parts.append("revoked: " + revokedOnly.sorted().map(\.description).joined(separator: ", ")) }
        return parts.joined(separator: "; ")
    }
}
