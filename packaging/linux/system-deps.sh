#!/usr/bin/env bash
# The system libraries and tools that xocview's Qt (the PySide6 wheels) and its tests need on
# Debian/Ubuntu, installed only when missing. `make run`, `make test` and `.ci/run` call it.
#
#   packaging/linux/system-deps.sh gui    a real window (Qt's xcb platform) and a font
#   packaging/linux/system-deps.sh test   headless Qt (offscreen), a font, the desktop tools
#
# Installs with apt-get (through sudo when not root); when it cannot, it prints the exact
# apt-get line to run and exits 1. Elsewhere than Linux it does nothing.
set -euo pipefail

mode=${1:-gui}
[ "$(uname -s)" = Linux ] || exit 0

# Library (as ldconfig names it) -> Debian package. tests/test_system_deps.py checks this table
# against what the installed PySide6 plugins really load, so a Qt upgrade cannot outgrow it.
declare -A lib_pkg=(
  [libEGL.so.1]=libegl1 [libGL.so.1]=libgl1 [libfontconfig.so.1]=libfontconfig1
  [libfreetype.so.6]=libfreetype6 [libxkbcommon.so.0]=libxkbcommon0
  [libdbus-1.so.3]=libdbus-1-3 [libglib-2.0.so.0]=libglib2.0-0 [libgthread-2.0.so.0]=libglib2.0-0
  [libX11.so.6]=libx11-6
  [libX11-xcb.so.1]=libx11-xcb1 [libxcb.so.1]=libxcb1 [libxkbcommon-x11.so.0]=libxkbcommon-x11-0
  [libxcb-cursor.so.0]=libxcb-cursor0 [libxcb-icccm.so.4]=libxcb-icccm4
  [libxcb-image.so.0]=libxcb-image0 [libxcb-keysyms.so.1]=libxcb-keysyms1
  [libxcb-randr.so.0]=libxcb-randr0 [libxcb-render-util.so.0]=libxcb-render-util0
  [libxcb-render.so.0]=libxcb-render0 [libxcb-shape.so.0]=libxcb-shape0
  [libxcb-shm.so.0]=libxcb-shm0 [libxcb-sync.so.1]=libxcb-sync1 [libxcb-util.so.1]=libxcb-util1
  [libxcb-xfixes.so.0]=libxcb-xfixes0 [libxcb-xkb.so.1]=libxcb-xkb1
)
# What the offscreen platform (tests) loads; the xcb platform (a window) loads all of the table.
offscreen_libs=(libEGL.so.1 libGL.so.1 libfontconfig.so.1 libfreetype.so.6 libxkbcommon.so.0
                libdbus-1.so.3 libglib-2.0.so.0 libgthread-2.0.so.0 libX11.so.6 libX11-xcb.so.1
                libxcb-cursor.so.0)
# The desktop-integration tests ask the freedesktop tools what a file manager would see; outside
# a desktop environment `xdg-mime query filetype` answers through `mimetype`.
test_tools=(xdg-mime:xdg-utils update-mime-database:shared-mime-info
            desktop-file-validate:desktop-file-utils mimetype:libfile-mimeinfo-perl)

case "$mode" in
  gui) libs=("${!lib_pkg[@]}"); tools=() ;;
  test) libs=("${offscreen_libs[@]}"); tools=("${test_tools[@]}") ;;
  *) echo "usage: $0 gui|test" >&2; exit 2 ;;
esac

known=$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)
pkgs=()
for lib in "${libs[@]}"; do
  grep -qF "$lib " <<<"$known" || pkgs+=("${lib_pkg[$lib]}")
done
# Text on the canvas needs at least one font.
if ! { command -v fc-list >/dev/null && [ -n "$(fc-list 2>/dev/null | head -n 1)" ]; }; then
  pkgs+=(fontconfig fonts-dejavu-core)
fi
for pair in "${tools[@]}"; do
  command -v "${pair%%:*}" >/dev/null || pkgs+=("${pair#*:}")
done

if [ "$mode" = gui ] && [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "system-deps: no DISPLAY or WAYLAND_DISPLAY: the window needs a desktop session" \
       "(or xvfb-run make run)" >&2
fi
[ "${#pkgs[@]}" -eq 0 ] && exit 0

mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
line="apt-get install -y --no-install-recommends ${pkgs[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
    sudo_cmd=(sudo)
  else
    echo "system-deps: Qt needs system packages that are missing; install them with:" >&2
    echo "  sudo $line" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null; then
  echo "system-deps: missing system packages (Debian names): ${pkgs[*]};" \
       "install their equivalents with your package manager" >&2
  exit 1
fi
echo "system-deps: installing ${pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! { "${sudo_cmd[@]}" apt-get update -qq &&
       "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; }
then
  echo "system-deps: apt-get failed; install the packages yourself with:" >&2
  echo "  ${sudo_cmd[*]:+sudo }$line" >&2
  exit 1
fi
