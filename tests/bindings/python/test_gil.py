"""The GIL is released while the runtime works: another Python thread runs meanwhile."""
import threading

import numpy as np


def test_gil_released_during_transfers(client):
    x = np.ones((2048, 2048), np.float32)  # 16 MiB
    a = client.put(x, "mesh{x=4} P(x,None)")
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        progress = []
        for _ in range(5):
            start = count[0]
            np.asarray(a)                        # ~10 ms of copies without the GIL
            client.put(x, "mesh{x=4} P(x,None)")
            progress.append(count[0] - start)
    finally:
        stop.set()
        t.join()
    # With the GIL held during the calls the spinning thread could not count at all (it gets
    # the GIL only at the 5 ms switch interval, and each call returns with the GIL taken back).
    assert max(progress) > 1000, progress
