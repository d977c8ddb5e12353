//! The linker settings a Node native addon needs on each platform.
fn main() {
    napi_build::setup();
}
