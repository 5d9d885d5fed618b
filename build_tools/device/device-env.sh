# Sourced by the scripts of build_tools/device/: the settings they share (see their headers).
#   TESSERA_DEVICE_PROLOGUE, TESSERA_DEVICE_LIB_DIR, TESSERA_DEVICE_BIN_DIR; run from the
#   repository's root.
PROLOGUE=${TESSERA_DEVICE_PROLOGUE:-.gl/on-device-prologue.sh}
# shellcheck disable=SC1090
[ -f "$PROLOGUE" ] && source "$PROLOGUE"
LIB_DIR=${TESSERA_DEVICE_LIB_DIR:-.devrun/lib}
[ -d "$LIB_DIR" ] && export LD_LIBRARY_PATH=$(cd "$LIB_DIR" && pwd):${LD_LIBRARY_PATH:-}
BIN_DIR=${TESSERA_DEVICE_BIN_DIR:-.devrun/bin}

# device_binary <path in the build folder>: the prebuilt binary of that name in BIN_DIR when there
# is one, else the path.
device_binary() {
  local prebuilt
  prebuilt="$BIN_DIR/$(basename "$1")"
  if [ -x "$prebuilt" ]; then echo "$prebuilt"; else echo "$1"; fi
}
