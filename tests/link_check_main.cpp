// The program a layer's link check builds (tests/CMakeLists.txt): it does nothing; what
// is checked is that every object of the layer's library links with the layers below.
int main() { return 0; }
