"""Support code of the end-to-end suite: launching recorded servers (`launch`), the official
MCP schemas (`schema`), transcript validation (`transcript`), a raw JSON-RPC driver (`raw`),
tool-result decoding (`payloads`) and the ledger seen from outside (`ledger`).

Nothing here asserts on the server's behaviour by itself except `transcript`, which every test
runs at teardown through the fixtures in conftest.py.
"""
