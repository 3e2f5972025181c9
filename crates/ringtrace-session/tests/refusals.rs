//! Directories a session is not written into, each refused with its own
//! error naming the path, and nothing written.

mod common;

use common::*;
use ringtrace_session::{CreateError, OptionsError, SessionOptions, SessionWriter};
use ringtrace_testkit::TempDir;

#[test]
fn a_directory_holding_a_session_is_refused_naming_it() {
    let tmp = TempDir::new("session-refuse-existing");
    let dir = tmp.path().join("s");
    let first = SessionWriter::create(&dir, SessionOptions::default()).unwrap();
    let before = walk(&dir);
    let err = SessionWriter::create(&dir, SessionOptions::default()).unwrap_err();
    assert!(
        matches!(
            &err,
            CreateError::ExistingSession {
                what: "a session index",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains(&dir.display().to_string()));
    assert_eq!(walk(&dir), before, "nothing written on refusal");
    first.finish().unwrap();
    // Finished, it is still a session.
    assert!(matches!(
        SessionWriter::create(&dir, SessionOptions::default()),
        Err(CreateError::ExistingSession { .. })
    ));
    // A lock alone (a writer that died while making it) too.
    let other = tmp.path().join("t");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("session.lock"), b"").unwrap();
    assert!(matches!(
        SessionWriter::create(&other, SessionOptions::default()),
        Err(CreateError::ExistingSession {
            what: "a session lock",
            ..
        })
    ));
}

#[test]
fn an_empty_directory_is_used_and_one_with_other_files_refused() {
    let tmp = TempDir::new("session-refuse-nonempty");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    SessionWriter::create(&empty, SessionOptions::default())
        .unwrap()
        .finish()
        .unwrap();
    assert!(empty.join("session").exists());
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("notes.txt"), b"mine").unwrap();
    let err = SessionWriter::create(&full, SessionOptions::default()).unwrap_err();
    assert!(
        matches!(&err, CreateError::NotEmpty { entry, .. } if entry == "notes.txt"),
        "{err}"
    );
    assert_eq!(tmp.entries(), ["empty", "full"]);
    let names: Vec<_> = std::fs::read_dir(&full)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["notes.txt"], "nothing written on refusal");
}

#[test]
fn a_missing_parent_is_its_own_error() {
    let tmp = TempDir::new("session-refuse-parent");
    let dir = tmp.path().join("absent/s");
    let err = SessionWriter::create(&dir, SessionOptions::default()).unwrap_err();
    match &err {
        CreateError::MissingParent { parent, .. } => assert_eq!(parent, &tmp.path().join("absent")),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("does not exist"));
    assert!(tmp.entries().is_empty());
}

#[test]
fn a_file_where_a_directory_must_be_is_not_a_directory() {
    let tmp = TempDir::new("session-refuse-file");
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    for path in [file.clone(), file.join("s")] {
        let err = SessionWriter::create(&path, SessionOptions::default()).unwrap_err();
        match &err {
            CreateError::NotADirectory { path: named } => assert_eq!(named, &file, "{err}"),
            other => panic!("{}: {other}", path.display()),
        }
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[test]
fn an_unwritable_parent_is_its_own_error() {
    // Root writes through modes, so make it real: a read-only tmpfs.
    let tmp = TempDir::new("session-refuse-ro");
    let mount = tmp.path().join("ro");
    std::fs::create_dir(&mount).unwrap();
    if let Err(why) = mount_tmpfs(&mount, "64k", ",ro") {
        println!("skipped: a read-only file system is needed to make a directory unwritable as root, and {why}");
        return;
    }
    let err = SessionWriter::create(mount.join("s"), SessionOptions::default());
    umount(&mount);
    match err {
        Err(CreateError::Unwritable { path, .. }) => assert_eq!(path, mount),
        other => panic!("{other:?}"),
    }
}

#[test]
fn options_out_of_range_are_refused_before_anything_is_made() {
    let tmp = TempDir::new("session-refuse-options");
    let dir = tmp.path().join("s");
    let err = SessionWriter::create(&dir, SessionOptions::default().rotate_size(0)).unwrap_err();
    assert!(matches!(
        err,
        CreateError::Options(OptionsError::RotateSize { value: 0, .. })
    ));
    assert!(err.to_string().contains("rotate_size 0"), "{err}");
    assert!(!dir.exists());
}
