import STOLModel

extension Stol_V1_Provenance {
    /// The wire form of a database's provenance (the same eight fields).
    public init(_ provenance: Provenance) {
        self.init()
        source = provenance.source
        release = provenance.release
        idNamespace = provenance.idNamespace
        licence = provenance.licence
        attribution = provenance.attribution
        citation = provenance.citation
        tool = provenance.tool
        built = provenance.built
    }
}
