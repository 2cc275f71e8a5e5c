# Sourced by the training bench scripts (demo.sh, run_h200.sh): start_gym LOG starts one `kgym serve` ($K) on every
# GPU over $RUNS/gym.db, its output appended to LOG, and returns once /health answers (two minutes at most). It
# sets GYM_PID (to stop it) and GYM_URL (for gym.server=...). One server for every arm: one timing lock.
GYM_URL=http://127.0.0.1:18231
start_gym() {
  "$K" serve --gpus all --port 18231 --store "$RUNS/gym.db" --slots-per-gpu 8 >> "$1" 2>&1 &
  GYM_PID=$!
  python3 -c "
import time, urllib.request
for _ in range(240):
    try:
        urllib.request.urlopen('$GYM_URL/health', timeout=2); break
    except Exception:
        time.sleep(0.5)"
}
