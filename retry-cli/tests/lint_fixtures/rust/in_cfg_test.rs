#[cfg(test)]
mod tests {
    #[test]
    fn waits_for_the_server() {
        while std::net::TcpStream::connect("127.0.0.1:8080").is_err() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
