fn fine() {}
