/// The version of STOL, one place for every program (`stol-client --version`, the
/// taxonomy service's status, the pipeline's provenance `tool`).
public enum STOLVersion {
    public static let current = "0.1.0"
}
