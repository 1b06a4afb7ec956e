import Foundation
import STOLFormat

/// The one public key the verifier trusts (`protocol/STOL-FORMAT.md` §7).
///
/// It is read from `/usr/share/stol/keys/release.pub`, or from the file named by
/// `STOL_TRUSTED_KEY` in the verifier's own environment (set by the unit, or by
/// `systemd/stack.sh` from the operator's environment). Never from the `.stol`
/// file, and never from anything a caller sends.
public enum TrustedKey {
    public static let installedPath = "/usr/share/stol/keys/release.pub"
    public static let environmentVariable = "STOL_TRUSTED_KEY"

    public static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path = environment[environmentVariable], !path.isEmpty { return path }
        return installedPath
    }

    /// Loads the key once, at start (before the sandbox closes the file system).
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment) -> Result<Ed25519.PublicKey, ImportError> {
        let path = path(environment: environment)
        do {
            return .success(try SigningKeyFile.loadPublicKey(path: path))
        } catch {
            return .failure(.noTrustedKey("\(error) (the verifier reads \(path); set \(environmentVariable) to another key file)"))
        }
    }

    /// The first 8 bytes of the key in hex, to name it in logs (public, not secret).
    public static func shortName(_ key: Ed25519.PublicKey) -> String {
        key.bytes.prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
