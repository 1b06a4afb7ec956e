"""Generated protobuf modules of protocol/*.proto (regenerate.sh)."""
