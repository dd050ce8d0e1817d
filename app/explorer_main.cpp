// manifold-explorer: the desktop application (placeholder main while the window is built).
int main() { return 0; }
