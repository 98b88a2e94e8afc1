# Sourced by the scripts/gpu/*.sh device scripts (`. "$(dirname "${BASH_SOURCE[0]}")/preamble.sh"`),
# what they all start with:
#   REPO        the repository root (whatever the working folder; a script that needs it there cds)
#   PYTHONPATH  REPO first, what was there before kept after it; PYTHONUNBUFFERED=1 (logs in order)
#   PY          the Python to run: $PYTHON, else python3
#   out_dir D   OUT (what the `run` tool brings back) defaults to D; the folder is made
#   device_line [FIELDS]   the GPU's name and driver (and nvidia-smi's FIELDS), for the log
#   device_ready           device_line with the compute mode, then the injection library built for
#                          this device's CUPTI (or found built), its path printed
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"

out_dir() {
  OUT="${OUT:-$1}"
  mkdir -p "$OUT"
}

device_line() {
  nvidia-smi --query-gpu="name,driver_version${1:+,$1}" --format=csv,noheader
}

device_ready() {
  device_line compute_mode
  python3 -m gpa_lsp.profile.cupti.builder
}
