#include <cstdio>

int main() {
  std::puts("unmask: under construction");
  return 0;
}
