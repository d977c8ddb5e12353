use wop_sdk::wop_node;

#[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
struct Echo;

fn main() {}
