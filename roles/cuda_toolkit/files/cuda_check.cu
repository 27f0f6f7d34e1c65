// gpuops.bringup cuda_toolkit verification: compiled and linked against the
// shared CUDA runtime on every node (device code through cicc and ptxas, the
// host part through the host compiler nvcc picks), run only where a GPU is
// live. Prints the devices it sees and checks one kernel's result.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void increment(int *values, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        values[i] += i;
    }
}

int main() {
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess) {
        std::printf("cudaGetDeviceCount: %s\n", cudaGetErrorString(err));
        return 1;
    }
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    const int n = 256;
    int host[n] = {0};
    int *device = nullptr;
    if (cudaMalloc(&device, sizeof(host)) != cudaSuccess ||
        cudaMemcpy(device, host, sizeof(host), cudaMemcpyHostToDevice) != cudaSuccess) {
        std::printf("cudaMalloc/cudaMemcpy: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    increment<<<1, n>>>(device, n);
    err = cudaMemcpy(host, device, sizeof(host), cudaMemcpyDeviceToHost);
    cudaFree(device);
    if (err != cudaSuccess || host[n - 1] != n - 1) {
        std::printf("kernel: %s, last value %d\n", cudaGetErrorString(err), host[n - 1]);
        return 1;
    }
    std::printf("devices %d runtime %d driver %d kernel ok\n", devices, runtime, driver);
    return 0;
}
