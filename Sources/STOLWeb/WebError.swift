/// What stops `stol-web` from starting, in words for the person who started it.
public enum WebError: Error, Equatable, CustomStringConvertible {
    case usage(String)
    case listen(String)

    public var description: String {
        switch self {
        case .usage(let text): text
        case .listen(let text): "cannot listen: \(text)"
        }
    }
}
