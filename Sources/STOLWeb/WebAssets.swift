import Foundation

/// The app's page, script, style and icon (Sources/STOLWeb/Assets), compiled into the binary
/// by SwiftPM (`.embedInCode`): no file to install beside it, nothing to find at run time,
/// nothing another user could swap.
public enum WebAssets {
    public struct Asset: Sendable {
        public let contentType: String
        /// A strong validator: the first 64 bits of the content's hash, in hex.
        public let etag: String
        public let bytes: [UInt8]

        init(contentType: String, bytes: [UInt8]) {
            self.contentType = contentType
            self.bytes = bytes
            etag = "\"" + String(format: "%016llx", Self.fnv1a(bytes)) + "\""
        }

        /// FNV-1a: a cheap, stable hash of the bytes for the ETag (not a security property).
        static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
            bytes.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01b3 }
        }
    }

    static let embedded: [String: Asset] = [
        "index.html": Asset(contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html),
        "app.js": Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.app_js),
        "app.css": Asset(contentType: "text/css; charset=utf-8", bytes: PackageResources.app_css),
        "icon.svg": Asset(contentType: "image/svg+xml", bytes: PackageResources.icon_svg),
    ]

    /// The page every address of the app answers with (the script draws the rest).
    public static var shell: Asset { embedded["index.html"]! }

    /// An asset by its file name (`app.js`); the shell is not one.
    public static func file(named name: String) -> Asset? {
        name == "index.html" ? nil : embedded[name]
    }

    /// Every asset, for the size budget (docs/web.md).
    public static var all: [String: Asset] { embedded }
}
