/// Facts of this build that every binary shows, in a module with no imports at all, so that the
/// front binary can say its version without linking what ``ChappieCore`` links.
public enum ChappieBuild {
    /// The version of this build, in semantic-versioning form.
    public static let version = "0.1.0"
}
