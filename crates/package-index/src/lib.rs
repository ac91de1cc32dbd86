//! Package indexes: Debian `Packages`/`Release`/by-hash, RPM `repomd.xml`, PEP 503 pages,
//! as pure functions of package metadata; and their publishing over storage-backend.
