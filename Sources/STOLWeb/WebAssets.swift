/// The app's pages, script, style and icon, compiled into the binary
/// (`WebAssets+Embedded.swift`, written from `web/` by `make web-assets`).
public enum WebAssets {
    public struct Asset: Sendable {
        public let contentType: String
        /// A strong validator: the content's hash.
        public let etag: String
        public let bytes: [UInt8]

        init(contentType: String, etag: String, text: String) {
            self.contentType = contentType
            self.etag = etag
            bytes = Array(text.utf8) + [0x0A]
        }
    }

    /// The page every address of the app answers with (the script draws the rest).
    public static var shell: Asset { embedded["index.html"]! }

    /// An asset by its file name (`app.js`); the shell is not one.
    public static func file(named name: String) -> Asset? {
        name == "index.html" ? nil : embedded[name]
    }

    /// Every asset, for the size budget (docs/web.md).
    public static var all: [String: Asset] { embedded }
}
