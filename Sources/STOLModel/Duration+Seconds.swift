extension Duration {
    /// The duration in seconds, with its fraction: for logs, progress and rates.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
