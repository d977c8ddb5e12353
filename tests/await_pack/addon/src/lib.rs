//! The await pack (`wop-sdk-await-pack`) as a Node native addon, for tests/await_nodes.rs.

wop_sdk_node::addon!(wop_sdk_await_pack::pack());
