//! The public listener as `main` runs it (`server::run` on a real socket):
//! shutdown turns readiness false, closes the listener and lets idle
//! connections go, within the grace period.

mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use support::{BASE, Service};
use tower::ServiceExt;

async fn readiness(service: &Service) -> StatusCode {
    let app = &service.app;
    let admin =
        query_api::server::admin::router(Arc::clone(&app.metrics), Arc::clone(&app.store), Arc::clone(&app.draining));
    admin.oneshot(Request::get("/readyz").body(Body::empty()).expect("request")).await.expect("infallible").status()
}

#[tokio::test]
async fn shutdown_turns_readiness_false_and_closes_the_listener_within_the_grace_period() {
    let service = Service::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(query_api::server::run(listener, Arc::clone(&service.app), async move {
        let _ = stopped.await;
    }));
    assert_eq!(readiness(&service).await, StatusCode::OK);

    // A keep-alive connection that has had its answer and stays open.
    let (_idle, status_line) = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(address).expect("connect");
        write!(stream, "GET {BASE}/openapi.json HTTP/1.1\r\nhost: test\r\n\r\n").expect("send");
        let mut status_line = [0; 12];
        stream.read_exact(&mut status_line).expect("an answer");
        (stream, status_line)
    })
    .await
    .expect("client");
    assert_eq!(&status_line, b"HTTP/1.1 200");

    let _ = stop.send(());
    let finished = tokio::time::timeout(Duration::from_secs(30), server).await;
    assert!(finished.is_ok(), "the server stops within its grace period");
    assert!(service.app.draining.load(Ordering::Acquire));
    assert_eq!(readiness(&service).await, StatusCode::SERVICE_UNAVAILABLE, "readiness is false once draining");
    assert!(std::net::TcpStream::connect(address).is_err(), "the listener is closed");
}
