/// The version of chappie.
///
/// Shown by `chappie --version` and `chappie doctor`, and sent in the `User-Agent` of every request.
public enum ChappieVersion {
    /// The version of this build, in semantic-versioning form.
    public static let current = "0.1.0"
}
