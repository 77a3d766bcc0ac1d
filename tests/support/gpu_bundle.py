"""A generated bundle root with a real Vulkan backend module, for the smoke run's GPU checks.

Where the real tree's ggml-vulkan cannot be built (Debian 12's headers lack
``VK_EXT_layer_settings``), the smoke run's GPU logic is checked against a
module that does what ggml-vulkan's ``ggml_backend_init`` does first, for
real: create a Vulkan 1.2 instance through the system's loader and list the
physical devices (lavapipe, Mesa's software driver, is one; with
``VK_ICD_FILENAMES`` at nothing there is no driver and the instance fails,
so the init returns NULL, as ggml's does), then pick its devices by
ggml-vulkan's rule (llama.cpp 0c1e570's ``ggml_vk_instance_init``): GPUs,
and a CPU device such as lavapipe only when ``GGML_VK_VISIBLE_DEVICES``
names it, else "No devices found".

``llama-simple`` here loads every ``libggml-*.so`` beside it, as
``ggml_backend_load_all`` does, and logs with ggml's and llama.cpp's own
format strings (:data:`LOG_FORMATS`, copied from llama.cpp 0c1e570's
``ggml/src/ggml-backend-reg.cpp`` and ``src/llama.cpp``; a test checks them
against the sdist); it offloads to the first Vulkan device when ``-ngl`` is
above 0, and "decodes" without a model.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

# (file of the real tree, the printf format the stand-in uses, as that file writes it)
LOG_FORMATS = (
    ("ggml/src/ggml-backend-reg.cpp", '"%s: loaded %s backend from %s\\n"'),
    (
        "ggml/src/ggml-backend-reg.cpp",
        '"%s: failed to initialize backend from %s: ggml_backend_init returned NULL\\n"',
    ),
    ("ggml/src/ggml-backend-reg.cpp", '"%s: failed to load %s: %s\\n"'),
    ("src/llama.cpp", '"%s: using device %s (%s) (%s) - %zu MiB free\\n"'),
)

_CPU_MODULE = """\
static int cpu_reg;
void * ggml_backend_init(void) { return &cpu_reg; }
const char * stand_in_name(void) { return "CPU"; }
int stand_in_device_count(void) { return 0; }
const char * stand_in_device_name(int i) { (void) i; return ""; }
"""

_VULKAN_MODULE = """\
#include <stdio.h>
#include <stdlib.h>
#include <vulkan/vulkan.h>
static int vk_reg;
static char names[8][VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
static uint32_t count;
/* What ggml-vulkan's reg does first: an instance (Vulkan 1.2), then its devices; NULL when no driver.
   Its device choice: GGML_VK_VISIBLE_DEVICES's indices when set, else every discrete or integrated GPU,
   else the first device that is not a CPU; a CPU device (lavapipe) only when named. */
void * ggml_backend_init(void) {
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, NULL, "ggml-vulkan", 1, NULL, 0, VK_API_VERSION_1_2};
    VkInstanceCreateInfo info = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, NULL, 0, &app, 0, NULL, 0, NULL};
    VkInstance instance;
    if (vkCreateInstance(&info, NULL, &instance) != VK_SUCCESS) return 0;
    VkPhysicalDevice devices[8];
    uint32_t found = 8;
    if (vkEnumeratePhysicalDevices(instance, &found, devices) < 0) found = 0;
    const char * visible = getenv("GGML_VK_VISIBLE_DEVICES");
    count = 0;
    for (uint32_t i = 0; i < found; i++) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(devices[i], &props);
        int gpu = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
               || props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
        int named = visible != NULL && (uint32_t) atoi(visible) == i;
        if ((visible == NULL && gpu) || named) {
            for (int c = 0; c < VK_MAX_PHYSICAL_DEVICE_NAME_SIZE; c++) names[count][c] = props.deviceName[c];
            count++;
        }
    }
    for (uint32_t i = 0; visible == NULL && count == 0 && i < found; i++) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(devices[i], &props);
        if (props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) {
            for (int c = 0; c < VK_MAX_PHYSICAL_DEVICE_NAME_SIZE; c++) names[count][c] = props.deviceName[c];
            count++;
        }
    }
    if (count == 0) fprintf(stderr, "ggml_vulkan: No devices found.\\n");
    return &vk_reg;
}
const char * stand_in_name(void) { return "Vulkan"; }
int stand_in_device_count(void) { return (int) count; }
const char * stand_in_device_name(int i) { return names[i]; }
"""

_SIMPLE = """\
#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
typedef void * (*init_fn)(void);
typedef const char * (*name_fn)(void);
typedef int (*count_fn)(void);
typedef const char * (*dev_fn)(int);
int main(int argc, char ** argv) {
    int ngl = 99, n = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-ngl") && i + 1 < argc) ngl = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--version")) { fprintf(stderr, "usage: %s -m model.gguf [-n n] [-ngl n] [prompt]\\n", argv[0]); return 1; }
    }
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0) return 2;
    self[len] = 0;
    char * dir = dirname(self);
    DIR * d = opendir(dir);
    struct dirent * e;
    const char * gpu_device = NULL;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "libggml-", 8) != 0 || strstr(e->d_name, ".so") == NULL) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        void * h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "%s: failed to load %s: %s\\n", "load_backend", path, dlerror()); continue; }
        init_fn init = (init_fn) dlsym(h, "ggml_backend_init");
        if (!init()) {
            fprintf(stderr, "%s: failed to initialize backend from %s: ggml_backend_init returned NULL\\n", "load_backend", path);
            continue;
        }
        const char * name = ((name_fn) dlsym(h, "stand_in_name"))();
        fprintf(stderr, "%s: loaded %s backend from %s\\n", "load_backend", name, path);
        if (strcmp(name, "Vulkan") == 0 && ((count_fn) dlsym(h, "stand_in_device_count"))() > 0)
            gpu_device = ((dev_fn) dlsym(h, "stand_in_device_name"))(0);
    }
    closedir(d);
    if (ngl > 0 && gpu_device)
        fprintf(stderr, "%s: using device %s (%s) (%s) - %zu MiB free\\n", "llama_model_load_from_file_impl",
                "Vulkan0", gpu_device, "unknown id", (size_t) 1024);
    fprintf(stderr, "main: decoded %d tokens in 0.01 s, speed: 400.00 t/s\\n", n);
    return 0;
}
"""


def write_vulkan_bundle_root(root: Path, *, vulkan_module: bool = True) -> Path:
    """Compile the stand-in ``llama-simple``, a CPU module and (``vulkan_module``) the Vulkan one into ``root``."""
    src = root.parent / f"{root.name}-src"
    src.mkdir(parents=True)
    root.mkdir(parents=True)
    for name, text in {"cpu.c": _CPU_MODULE, "vulkan.c": _VULKAN_MODULE, "simple.c": _SIMPLE}.items():
        (src / name).write_text(textwrap.dedent(text))

    def cc(*args: str) -> None:
        subprocess.run(["cc", "-O1", *args], check=True, capture_output=True, text=True)

    cc("-shared", "-fPIC", str(src / "cpu.c"), "-o", str(root / "libggml-cpu.so"))
    if vulkan_module:
        cc("-shared", "-fPIC", str(src / "vulkan.c"), "-o", str(root / "libggml-vulkan.so"), "-lvulkan")
    cc(str(src / "simple.c"), "-o", str(root / "llama-simple"), "-ldl")
    return root
