fn connect() -> Option<Connection> {
    for _attempt in 0..5 {
        if let Ok(connection) = try_connect() {
            return Some(connection);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    None
}
