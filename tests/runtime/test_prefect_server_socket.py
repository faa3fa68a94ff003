"""The local server's listening socket: connections accepted on it send at once (`TCP_NODELAY`), as those of
`prefect server start` do. With Nagle's algorithm on, every API answer waited ~40 ms for the client's delayed
ACK, and a 1-case warm run took 0.5 s longer (found by benchmarks/bench_vs_adk.py)."""

from __future__ import annotations

import asyncio
import socket

from agent_eval.runtime.prefect_server import _bind


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _nodelay_of_an_accepted_connection(listener: socket.socket) -> int:
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connect, sock=listener)  # as uvicorn serves `sockets=[listener]`
    async with server:
        _, writer = await asyncio.open_connection("127.0.0.1", listener.getsockname()[1])
        value = await asyncio.wait_for(accepted, timeout=10)
        writer.close()
    return value


def test_connections_to_the_local_server_have_nagle_off() -> None:
    listener = _bind(_free_port())

    assert asyncio.run(_nodelay_of_an_accepted_connection(listener)) != 0
